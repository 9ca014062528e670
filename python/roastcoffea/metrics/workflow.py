"""Workflow totals and rates: events, bytes and time of the whole run.

Sources: the coffea report (``entries``, ``bytesread``, ``processtime``,
``chunks``), ``custom_metrics`` merged per dataset with the chunk records, the
wall time of the collector's block, and the fine metrics (CPU seconds).
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from roastcoffea.metrics._util import Metrics, divide, is_number

if TYPE_CHECKING:
    from roastcoffea.metrics import MetricsInputs

#: metric key -> field of a coffea report (and of a merged per-dataset entry).
TOTALS = {
    "total_events": "entries",
    "bytes_read_compressed": "bytesread",
    "total_process_time": "processtime",
}


def custom_fields(entry: dict[str, Any]) -> dict[str, float]:
    """The report fields of one ``custom_metrics`` entry (0.1.2 layout), those present only."""
    counters = entry.get("performance_counters")
    fields = {
        "entries": entry.get("entries"),
        "processtime": entry.get("duration"),
        "bytesread": counters.get("num_requested_bytes") if isinstance(counters, dict) else None,
    }
    return {name: value for name, value in fields.items() if is_number(value)}


def chunk_fields(chunks: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per dataset, the report fields summed over its successful chunk records.

    ``entries`` = Σ num_events, ``processtime`` = Σ duration (process() time,
    as coffea's processtime), ``bytesread`` = Σ bytes_read_task (the file
    source's bytes at task end, as coffea's bytesread). A field is left out
    when a successful chunk of the dataset lacks it.
    """
    by_dataset: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for chunk in chunks:
        if not chunk.get("error"):
            by_dataset[chunk.get("dataset")].append(chunk)
    sources = {"entries": "num_events", "processtime": "duration", "bytesread": "bytes_read_task"}
    table: dict[Any, dict[str, float]] = {}
    for dataset, records in by_dataset.items():
        table[dataset] = {
            field: sum(r[key] for r in records)
            for field, key in sources.items()
            if all(is_number(r.get(key)) for r in records)
        }
    return table


def merged_table(custom: dict[str, Any], chunks: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Chunk-record totals per dataset, replaced field by field by ``custom_metrics``.

    A dataset named in ``custom_metrics`` takes the fields its entry gives and
    keeps the chunk records' values for the others; datasets it does not name
    keep the chunk records' values. Each entry says its ``source``.
    """
    table: dict[str, dict[str, Any]] = {
        dataset: {**fields, "source": "chunks"} for dataset, fields in chunk_fields(chunks).items()
    }
    for dataset, entry in custom.items():
        if isinstance(entry, dict):
            base = table.get(dataset, {"source": None})
            source = "custom_metrics" if base["source"] is None else "custom_metrics+chunks"
            table[dataset] = {**base, **custom_fields(entry), "source": source}
    return table


def compute(inputs: MetricsInputs, out: Metrics) -> None:
    """Put wall time, totals, chunk count, CPU per chunk and the rates."""
    if inputs.wall_time > 0:
        out.put("wall_time", inputs.wall_time)
    else:
        out.missing("wall_time", "the collector's wall time is 0")
    out.put("time_origin", inputs.t_start)
    _put_totals(inputs, out)
    _put_num_chunks(inputs, out)
    out.derive(
        "avg_cpu_time_per_chunk",
        lambda cpu, n: divide(cpu, n, "num_chunks"),
        "processor_cpu_time_seconds",
        "num_chunks",
    )
    out.derive(
        "overall_rate_gbps", lambda b, w: b * 8 / 1e9 / w, "bytes_read_compressed", "wall_time"
    )
    out.derive("overall_rate_mb_s", lambda b, w: b / 1e6 / w, "bytes_read_compressed", "wall_time")
    out.derive("event_rate_wall_khz", lambda e, w: e / w / 1e3, "total_events", "wall_time")
    out.derive(
        "event_rate_agg_khz",
        lambda e, t: divide(e, t, "processor_task_time_seconds") / 1e3,
        "total_events",
        "processor_task_time_seconds",
    )


def _put_totals(inputs: MetricsInputs, out: Metrics) -> None:
    """Events, bytes and process time: per-dataset sums with custom_metrics, else the report."""
    report = inputs.coffea_report
    table: dict[str, dict[str, Any]] = {}
    if inputs.custom_metrics:
        table = merged_table(inputs.custom_metrics, inputs.chunks)
        out.put("custom_metrics", inputs.custom_metrics)
        out.put("dataset_totals", table)
    else:
        for key in ("custom_metrics", "dataset_totals"):
            out.missing(key, "no custom_metrics given (totals from the coffea report)")
    sources: dict[str, str] = {}
    for key, field in TOTALS.items():
        if table and all(is_number(entry.get(field)) for entry in table.values()):
            out.put(key, sum(entry[field] for entry in table.values()))
            sources[key] = "dataset_totals"
        elif report is not None and is_number(report.get(field)):
            out.put(key, report[field])
            sources[key] = "coffea_report"
        elif report is None:
            out.missing(key, "no coffea report set")
        else:
            out.missing(key, f"the coffea report has no {field!r}")
    out.put("totals_source", sources)


def _put_num_chunks(inputs: MetricsInputs, out: Metrics) -> None:
    report = inputs.coffea_report
    if inputs.chunks:
        out.put("num_chunks", len(inputs.chunks))
    elif report is not None and is_number(report.get("chunks")):
        out.put("num_chunks", report["chunks"])
    else:
        out.missing("num_chunks", "no chunk record and no 'chunks' in the coffea report")
