"""Chunk statistics from the ``@track_metrics`` records: durations, memory, events, sections.

Source: the chunk records of the collector's span (one per ``process()`` call,
format in docs/architecture.md), one per work item: a work item Dask ran again
(its result lost with a worker, or retried) counts once, and its extra
executions are reported on their own. A record with an ``error`` is a failed
chunk: it is counted, and left out of every distribution, total and table
below, whose values it would cut short.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from roastcoffea.metrics._util import (
    Metrics,
    describe,
    divide,
    is_number,
    lacking,
    put_stats,
    put_sums,
)

if TYPE_CHECKING:
    from roastcoffea.metrics import MetricsInputs

#: Per-chunk distributions: record field -> {statistic: metric key}.
DISTRIBUTIONS = {
    "duration": {
        "mean": "chunk_duration_mean",
        "min": "chunk_duration_min",
        "max": "chunk_duration_max",
        "std": "chunk_duration_std",
    },
    "task_duration": {
        "mean": "chunk_task_duration_mean",
        "min": "chunk_task_duration_min",
        "max": "chunk_task_duration_max",
        "std": "chunk_task_duration_std",
    },
    "process_cpu_seconds": {
        "mean": "chunk_cpu_time_mean",
        "min": "chunk_cpu_time_min",
        "max": "chunk_cpu_time_max",
        "std": "chunk_cpu_time_std",
    },
    "mem_delta_mib": {
        "mean": "chunk_mem_delta_mean_mib",
        "min": "chunk_mem_delta_min_mib",
        "max": "chunk_mem_delta_max_mib",
        "std": "chunk_mem_delta_std_mib",
    },
    "num_events": {
        "total": "total_events_from_chunks",
        "mean": "chunk_events_mean",
        "min": "chunk_events_min",
        "max": "chunk_events_max",
        "std": "chunk_events_std",
    },
}

#: Per-chunk section dicts, each a kind in ``sections``.
SECTION_KINDS = ("timing", "memory", "bytes", "custom")

#: Sums over the extra executions of work items: metric key -> record field.
RECOMPUTED_SUMS = {
    "recomputed_chunk_cpu_seconds": "process_cpu_seconds",
    "recomputed_chunk_seconds": "duration",
    "recomputed_events": "num_events",
}
RECOMPUTED = ("recomputed_chunks", *RECOMPUTED_SUMS)

#: What the instrumentation cost, summed over every execution: metric key -> record field.
INSTRUMENT_SUMS = {
    "instrument_seconds": "instrument_seconds",
    "instrument_cpu_seconds": "instrument_cpu_seconds",
    "chunks_task_seconds": "task_duration",
}
MONITORING_COST = (
    *INSTRUMENT_SUMS,
    "instrument_seconds_per_chunk",
    "monitoring_seconds_per_chunk",
    "monitoring_percent",
)

_TABLES = ("num_successful_chunks", "num_failed_chunks", "failed_chunks", "per_dataset")
_MAPS = ("chunk_info", "sections")


def compute(inputs: MetricsInputs, out: Metrics, extra: list[dict[str, Any]]) -> None:
    """Put the chunk counts, distributions, per-dataset table, chunk_info and sections.

    ``inputs.chunks`` holds one record per work item (:func:`count_once`);
    ``extra`` the other executions, reported as the recomputed figures.
    """
    out.put("raw_chunk_metrics", list(inputs.chunks))
    out.put("recomputed_chunk_records", list(extra))
    if not inputs.chunks:
        reason = "no chunk record (process() is not decorated with @track_metrics)"
        for key in (*_TABLES, *_MAPS, *RECOMPUTED, *MONITORING_COST):
            out.missing(key, reason)
        for keys in DISTRIBUTIONS.values():
            for key in keys.values():
                out.missing(key, reason)
        return
    good = [c for c in inputs.chunks if not c.get("error")]
    failed = [c for c in inputs.chunks if c.get("error")]
    out.put("num_successful_chunks", len(good))
    out.put("num_failed_chunks", len(failed))
    out.put("failed_chunks", [_failure(c) for c in failed])
    for field, keys in DISTRIBUTIONS.items():
        values = [c[field] for c in good if is_number(c.get(field))]
        reason = lacking(good, field) or "no successful chunk record"
        put_stats(out, values, keys, reason)
    out.put("per_dataset", per_dataset(inputs.chunks))
    out.put("chunk_info", chunk_info(good))
    out.put("sections", sections(good))
    _put_recomputed(extra, out)
    _put_monitoring_cost([*inputs.chunks, *extra], out)


def work_item(chunk: dict[str, Any]) -> tuple[Any, ...] | None:
    """The coffea work item a chunk record processed, or None when the record cannot say."""
    item = tuple(chunk.get(f) for f in ("dataset", "file", "treename", "entry_start", "entry_stop"))
    return None if None in item[1:] else (*item, chunk.get("uuid"))


def count_once(chunks: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Split chunk records into one per work item and the extra executions.

    Dask runs a work item again when the result of its first execution was
    lost with a worker (or a retry follows a failure): every execution sends
    a record. The record kept for an item is its last successful execution
    (the result Dask kept), else its last execution; records that do not name
    their work item are all kept.

    Returns
    -------
    once : list of dict
        One record per work item, in the order the items were first seen.
    extra : list of dict
        The other executions, in input order.
    """
    kept: dict[tuple[Any, ...], dict[str, Any]] = {}
    loose: list[tuple[int, dict[str, Any]]] = []
    first_seen: dict[tuple[Any, ...], int] = {}
    for position, chunk in enumerate(chunks):
        item = work_item(chunk)
        if item is None:
            loose.append((position, chunk))
            continue
        first_seen.setdefault(item, position)
        held = kept.get(item)
        if held is None or not chunk.get("error") or held.get("error"):
            kept[item] = chunk
    chosen = {id(chunk) for chunk in kept.values()}
    ordered = sorted(
        [(first_seen[item], chunk) for item, chunk in kept.items()] + loose,
        key=lambda pair: pair[0],
    )
    once = [chunk for _, chunk in ordered]
    extra = [c for c in chunks if id(c) not in chosen and work_item(c) is not None]
    return once, extra


def _put_recomputed(extra: list[dict[str, Any]], out: Metrics) -> None:
    """The extra executions: how many, and what they cost."""
    out.put("recomputed_chunks", len(extra))
    put_sums(out, extra, RECOMPUTED_SUMS)


def _put_monitoring_cost(executions: list[dict[str, Any]], out: Metrics) -> None:
    """The instrumentation's measured cost and, with the phase clock's, per chunk and share.

    The phase clock's cost counts when it measured tasks; when it measured none (off,
    or not on these workers) it ran no hook and cost nothing.
    """
    put_sums(out, executions, INSTRUMENT_SUMS)
    n = len(executions)
    out.derive("instrument_seconds_per_chunk", lambda own: own / n, "instrument_seconds")
    if out.get("phase_tasks") is None:
        out.derive("monitoring_seconds_per_chunk", lambda own: own / n, "instrument_seconds")
        out.derive(
            "monitoring_percent",
            lambda own, tasks: 100.0 * divide(own, tasks, "the chunks' task time"),
            "instrument_seconds",
            "chunks_task_seconds",
        )
        return
    out.derive(
        "monitoring_seconds_per_chunk",
        lambda own, clock: (own + clock) / n,
        "instrument_seconds",
        "phase_clock_seconds",
    )
    out.derive(
        "monitoring_percent",
        lambda own, clock, tasks: 100.0 * divide(own + clock, tasks, "the chunks' task time"),
        "instrument_seconds",
        "phase_clock_seconds",
        "chunks_task_seconds",
    )


def _failure(chunk: dict[str, Any]) -> dict[str, Any]:
    keys = ("dataset", "file", "entry_start", "entry_stop", "worker", "error")
    return {key: chunk.get(key) for key in keys}


def _total(records: list[dict[str, Any]], field: str) -> float | None:
    """Σ field over records; None without records or when one lacks it (a partial sum misleads)."""
    if not records or not all(is_number(r.get(field)) for r in records):
        return None
    return sum(r[field] for r in records)


def per_dataset(chunks: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    """Chunk counts and totals per dataset.

    ``num_chunks`` counts every record, ``num_failed`` the failed ones; the
    totals and means are over the successful ones. ``events_per_second`` is
    total_events / total_duration (the rate inside process()). A value is None
    when a successful record lacks its input or there is no successful chunk.
    """
    by_dataset: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for chunk in chunks:
        by_dataset[chunk.get("dataset")].append(chunk)
    table: dict[Any, dict[str, Any]] = {}
    for dataset, records in by_dataset.items():
        good = [r for r in records if not r.get("error")]
        duration = _total(good, "duration")
        events = _total(good, "num_events")
        table[dataset] = {
            "num_chunks": len(records),
            "num_failed": len(records) - len(good),
            "total_duration": duration,
            "total_task_duration": _total(good, "task_duration"),
            "total_events": events,
            "mean_duration": duration / len(good) if duration is not None else None,
            "mean_events_per_chunk": events / len(good) if events is not None else None,
            "events_per_second": (events / duration if events is not None and duration else None),
        }
    return table


def chunk_info(chunks: list[dict[str, Any]]) -> dict[tuple[Any, ...], tuple[Any, Any, Any]]:
    """{(file, entry_start, entry_stop): (t_start, t_end, bytes_read)} for throughput plots.

    Records without file, entry range or times are left out; ``bytes_read`` is
    None when unmeasured (never 0). A range seen twice (a retried chunk) keeps
    the last record.
    """
    info: dict[tuple[Any, ...], tuple[Any, Any, Any]] = {}
    for c in chunks:
        fields = (c.get("file"), c.get("entry_start"), c.get("entry_stop"))
        times = (c.get("t_start"), c.get("t_end"))
        if None not in fields and None not in times:
            info[fields] = (*times, c.get("bytes_read"))
    return info


def sections(chunks: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per-section statistics across chunks, per kind (timing s, memory MiB, bytes, custom).

    For each kind and section name: :func:`describe` of the section's values
    over the chunks that recorded it (``count`` is that number of chunks);
    ``non_numeric`` counts the values left out because they are not numbers
    (None: unmeasured; for custom metrics also text and the like); ``calls`` is
    the number of tracked blocks summed over chunks (a name repeated in a chunk
    accumulates), None when a record lacks ``section_counts`` for it.
    """
    values: dict[str, dict[str, list[Any]]] = {kind: defaultdict(list) for kind in SECTION_KINDS}
    calls: dict[str, dict[str, list[Any]]] = {kind: defaultdict(list) for kind in SECTION_KINDS}
    for chunk in chunks:
        counts = chunk.get("section_counts") or {}
        for kind in SECTION_KINDS:
            for name, value in (chunk.get(kind) or {}).items():
                values[kind][name].append(value)
                calls[kind][name].append((counts.get(kind) or {}).get(name))
    table: dict[str, dict[str, dict[str, Any]]] = {}
    for kind, names in values.items():
        table[kind] = {}
        for name in sorted(names, key=str):
            numbers = [v for v in names[name] if is_number(v)]
            blocks = calls[kind][name]
            table[kind][name] = {
                **(describe(numbers) or {"count": 0}),
                "non_numeric": len(names[name]) - len(numbers),
                "calls": sum(blocks) if all(is_number(n) for n in blocks) else None,
            }
    return table
