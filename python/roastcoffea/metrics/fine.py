"""Fine performance metrics of the collector's span: Dask's digests, split by prefix and worker.

Source: ``snapshot["digests"]``, each worker's cumulative ``Worker.digests_total``.
Only the contexts that carry a span id (``execute``, ``p2p``) belong to a span;
each sum is over one (activity, unit) pair, so seconds and bytes never mix.

Processor tasks are those of the ``execute`` context whose prefix is in the
processor prefix set; everything else in the span (reduce, scatter, p2p) is
overhead, so processor + overhead is the span's total by construction.
"""

from __future__ import annotations

import math
import operator
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from roastcoffea.metrics._util import Metrics, divide, finite_or_none

if TYPE_CHECKING:
    from roastcoffea.metrics import MetricsInputs

#: Digest contexts whose keys carry a span id (distributed's CONTEXTS_WITH_SPAN_ID).
SPAN_CONTEXTS = ("execute", "p2p")

#: (worker, context, prefix, activity, unit): the digest key without its span.
Row = tuple[str, str, str, str, str]

#: Sums over every prefix of the span: metric key -> (activity, unit).
SPAN_SUMS = {
    "disk_read_bytes": ("disk-read", "bytes"),
    "disk_write_bytes": ("disk-write", "bytes"),
    "compression_time_seconds": ("compress", "seconds"),
    "decompression_time_seconds": ("decompress", "seconds"),
    "serialization_time_seconds": ("serialize", "seconds"),
    "deserialization_time_seconds": ("deserialize", "seconds"),
    "total_bytes_memory_read_dask": ("memory-read", "bytes"),
}

#: Task statistics summed per prefix and per worker (first_start/last_stop are min/max).
TASK_SUMS = ("tasks", "erred", "compute_seconds", "transfer_seconds", "output_bytes")

#: Keys of the processor/overhead split (all unavailable without processor prefixes).
_SPLIT_KEYS = (
    "processor_cpu_time_seconds",
    "processor_noncpu_time_seconds",
    "processor_task_time_seconds",
    "overhead_cpu_time_seconds",
    "overhead_noncpu_time_seconds",
    "processor_cpu_percent",
    "processor_noncpu_percent",
)
#: Inputs of the two derived overhead totals, and those totals.
_COMPRESSION = ("compression_time_seconds", "decompression_time_seconds")
_SERIALIZATION = ("serialization_time_seconds", "deserialization_time_seconds")
_DERIVED_KEYS = ("total_compression_overhead_seconds", "total_serialization_overhead_seconds")


def span_rows(snapshot: dict[str, Any]) -> dict[Row, float]:
    """The ``execute`` and ``p2p`` digests of the snapshot, keyed without the span id.

    The snapshot holds the collector's span and its descendants only (the scheduler
    filters it); rows of several of them that share the other fields are summed.
    """
    rows: dict[Row, float] = defaultdict(float)
    for (worker, context, _, prefix, activity, unit), value in snapshot["digests"].items():
        if context in SPAN_CONTEXTS:
            rows[(worker, context, prefix, activity, unit)] += value
    return dict(rows)


def span_metrics(snapshot: dict[str, Any]) -> dict[tuple[str, str, str, str], float]:
    """The span's digests summed over workers: Dask's ``Span.cumulative_worker_metrics``
    shape ``(context, prefix, activity, unit)`` (roastcoffea 0.1.2's ``span_metrics``)."""
    return _over_workers(span_rows(snapshot))


def processor_prefixes(inputs: MetricsInputs) -> tuple[set[str], str]:
    """The processor task prefixes and where they come from.

    Precedence: the explicit override, then the prefixes the workers saw
    running a coffea work item (prefix records), then the chunk records'
    ``prefix``. Returns ``(prefixes, source)`` with source ``"override"``,
    ``"workers"``, ``"chunks"`` or ``"none"``.
    """
    if inputs.processor_prefixes is not None:
        return set(inputs.processor_prefixes), "override"
    if inputs.detected_prefixes:
        return set(inputs.detected_prefixes), "workers"
    from_chunks = {c["prefix"] for c in inputs.chunks if c.get("prefix")}
    if from_chunks:
        return from_chunks, "chunks"
    return set(), "none"


def compute(inputs: MetricsInputs, out: Metrics) -> None:
    """Put the fine metrics, the processor/overhead split, per-prefix and per-worker tables."""
    rows = span_rows(inputs.snapshot)
    prefixes, source = processor_prefixes(inputs)
    out.put("processor_prefixes", sorted(prefixes))
    out.put("processor_prefix_source", source)
    out.put("raw_span_metrics", _over_workers(rows))
    out.put("per_worker_fine_metrics", _per_worker(rows))
    out.put("per_prefix", _per_prefix(inputs, rows, prefixes))
    out.put("per_worker", _worker_table(inputs, rows))
    out.put("monitoring", _monitoring(inputs.snapshot))
    if not rows:
        reason = "no fine performance metrics (execute/p2p digests) in the collector's span"
        for key in (*_SPLIT_KEYS, "total_cpu_time", *SPAN_SUMS, *_DERIVED_KEYS):
            out.missing(key, reason)
    else:
        _put_split(out, rows, prefixes, source)
        for key, (activity, unit) in SPAN_SUMS.items():
            out.put(key, _total(rows, activity, unit))
        out.derive("total_compression_overhead_seconds", operator.add, *_COMPRESSION)
        out.derive("total_serialization_overhead_seconds", operator.add, *_SERIALIZATION)


def _put_split(out: Metrics, rows: dict[Row, float], prefixes: set[str], source: str) -> None:
    """Processor vs overhead thread time, and the span's total CPU time."""
    cpu = _partition(rows, prefixes, "thread-cpu")
    if source == "none":
        reason = (
            "no processor task prefix identified (no override, no prefix record from "
            "the workers, no chunk record)"
        )
        for key in _SPLIT_KEYS:
            out.missing(key, reason)
        out.put("total_cpu_time", math.fsum(cpu))
        return
    noncpu = _partition(rows, prefixes, "thread-noncpu")
    out.put("processor_cpu_time_seconds", cpu[0])
    out.put("overhead_cpu_time_seconds", cpu[1])
    out.put("total_cpu_time", cpu[0] + cpu[1])
    out.put("processor_noncpu_time_seconds", noncpu[0])
    out.put("overhead_noncpu_time_seconds", noncpu[1])
    out.put(
        "processor_task_time_seconds",
        math.fsum(
            value
            for (_, context, prefix, _, unit), value in rows.items()
            if context == "execute" and prefix in prefixes and unit == "seconds"
        ),
    )
    busy = cpu[0] + noncpu[0]
    what = "processor thread time (thread-cpu + thread-noncpu)"
    out.derive("processor_cpu_percent", lambda: 100.0 * divide(cpu[0], busy, what))
    out.derive("processor_noncpu_percent", lambda: 100.0 * divide(noncpu[0], busy, what))


def _partition(rows: dict[Row, float], prefixes: set[str], activity: str) -> tuple[float, float]:
    """Σ seconds of ``activity`` in processor rows, and in all other rows."""
    processor: list[float] = []
    overhead: list[float] = []
    for (_, context, prefix, row_activity, unit), value in rows.items():
        if row_activity == activity and unit == "seconds":
            is_processor = context == "execute" and prefix in prefixes
            (processor if is_processor else overhead).append(value)
    return math.fsum(processor), math.fsum(overhead)


def _total(rows: dict[Row, float], activity: str, unit: str) -> float:
    return math.fsum(v for (_, _, _, a, u), v in rows.items() if a == activity and u == unit)


def _over_workers(rows: dict[Row, float]) -> dict[tuple[str, str, str, str], float]:
    """Dask's ``Span.cumulative_worker_metrics`` shape: summed over workers."""
    summed: dict[tuple[str, str, str, str], float] = defaultdict(float)
    for (_, context, prefix, activity, unit), value in rows.items():
        summed[(context, prefix, activity, unit)] += value
    return dict(summed)


def _per_worker(rows: dict[Row, float]) -> dict[str, dict[tuple[str, str, str, str], float]]:
    table: dict[str, dict[tuple[str, str, str, str], float]] = defaultdict(dict)
    for (worker, context, prefix, activity, unit), value in rows.items():
        table[worker][(context, prefix, activity, unit)] = value
    return dict(table)


def _task_rows(inputs: MetricsInputs) -> list[dict[str, Any]]:
    """The snapshot's task statistics rows of the span, finished or erred tasks only."""
    return [row for row in inputs.snapshot["tasks"] if row["worker"] and row["span"]]


def _task_stats(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Sum task statistics rows; first_start/last_stop are None when no task finished."""
    stats: dict[str, Any] = {key: sum(row[key] for row in rows) for key in TASK_SUMS}
    starts = [row["first_start"] for row in rows if row["first_start"]]
    stops = [row["last_stop"] for row in rows if row["last_stop"]]
    stats["first_start"] = min(starts) if starts else None
    stats["last_stop"] = max(stops) if stops else None
    return stats


def _thread_seconds(values: dict[tuple[str, str], float]) -> dict[str, float]:
    """thread-cpu, thread-noncpu and all seconds from {(activity, unit): value}."""
    return {
        "thread_cpu_seconds": values.get(("thread-cpu", "seconds"), 0.0),
        "thread_noncpu_seconds": values.get(("thread-noncpu", "seconds"), 0.0),
        "task_seconds": math.fsum(v for (_, unit), v in values.items() if unit == "seconds"),
    }


def _per_prefix(
    inputs: MetricsInputs, rows: dict[Row, float], prefixes: set[str]
) -> dict[str, dict[str, Any]]:
    """{prefix: task statistics + execute thread seconds + whether it is a processor prefix}."""
    tasks: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in _task_rows(inputs):
        tasks[row["prefix"]].append(row)
    seconds: dict[str, dict[tuple[str, str], float]] = defaultdict(lambda: defaultdict(float))
    for (_, context, prefix, activity, unit), value in rows.items():
        if context == "execute":
            seconds[prefix][(activity, unit)] += value
    return {
        prefix: {
            **_task_stats(tasks.get(prefix, [])),
            **_thread_seconds(seconds.get(prefix, {})),
            "processor": prefix in prefixes,
        }
        for prefix in sorted(set(tasks) | set(seconds))
    }


def _worker_table(inputs: MetricsInputs, rows: dict[Row, float]) -> dict[str, dict[str, Any]]:
    """{worker: task statistics + thread seconds of every context of the span}."""
    tasks: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in _task_rows(inputs):
        tasks[row["worker"]].append(row)
    seconds: dict[str, dict[tuple[str, str], float]] = defaultdict(lambda: defaultdict(float))
    for (worker, _, _, activity, unit), value in rows.items():
        seconds[worker][(activity, unit)] += value
    return {
        worker: {
            **_task_stats(tasks.get(worker, [])),
            **_thread_seconds(seconds.get(worker, {})),
        }
        for worker in sorted(set(tasks) | set(seconds))
    }


def _monitoring(snapshot: dict[str, Any]) -> dict[str, Any]:
    """The plugin's self-report: counters (NaN -> None), caught errors, payload gaps."""
    counters = {
        key: finite_or_none(value) if isinstance(value, float) else value
        for key, value in snapshot["counters"].items()
    }
    workers = snapshot["workers"].values()
    return {
        **counters,
        "errors": dict(snapshot["errors"]),
        "payload_gaps": sum(w["gaps"] for w in workers),
        "worker_restarts": sum(w["restarts"] for w in workers),
    }
