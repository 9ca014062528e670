"""Tables of :mod:`roastcoffea.metrics.fine`: processor vs overhead, per task prefix and worker."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roastcoffea.report.tables.cells import (
    Cell,
    Column,
    TableData,
    count,
    kv_rows,
    kv_table,
    or_zero,
    percent,
)
from roastcoffea.units import format_bytes, format_time

PREFIX_TABLE_TITLE = "Fine Metrics per Task Prefix"
WORKER_TABLE_TITLE = "Fine Metrics per Worker"


def fine_metrics_table(metrics: Mapping[str, Any]) -> TableData:
    """Processor vs overhead thread time, spill, compression and serialization, from the span."""
    rows: list[tuple[Cell, ...]] = []
    prefixes = metrics.get("processor_prefixes")
    if isinstance(prefixes, list):
        shown = ", ".join(str(p) for p in prefixes) if prefixes else "none"
        source = metrics.get("processor_prefix_source")
        rows.append((Cell("Processor Task Prefixes"), Cell(f"{shown} ({source})")))
    rows += kv_rows(
        metrics,
        (
            ("Processor CPU Time", "processor_cpu_time_seconds", format_time),
            ("Processor Non-CPU Time", "processor_noncpu_time_seconds", format_time),
            ("  CPU %", "processor_cpu_percent", percent),
            ("  Non-CPU %", "processor_noncpu_percent", percent),
            ("Overhead CPU Time", "overhead_cpu_time_seconds", format_time),
            ("Overhead Non-CPU Time", "overhead_noncpu_time_seconds", format_time),
            ("Disk Read (spill)", "disk_read_bytes", format_bytes),
            ("Disk Write (spill)", "disk_write_bytes", format_bytes),
            ("Compression Overhead", "total_compression_overhead_seconds", format_time),
            ("  Compress", "compression_time_seconds", format_time),
            ("  Decompress", "decompression_time_seconds", format_time),
            ("Serialization Overhead", "total_serialization_overhead_seconds", format_time),
            ("  Serialize", "serialization_time_seconds", format_time),
            ("  Deserialize", "deserialization_time_seconds", format_time),
        ),
    )
    return kv_table("Fine Metrics (from Dask Spans)", rows)


#: Columns of a row of task statistics and digests (per prefix, per worker).
TASK_COLUMNS = tuple(
    Column(name, numeric=True)
    for name in ("Tasks", "Erred", "Compute", "Thread CPU", "Thread Non-CPU")
)


def _task_cells(row: Mapping[str, Any]) -> tuple[Cell, ...]:
    erred = or_zero(row.get("erred"))
    return (
        Cell(count(or_zero(row.get("tasks")))),
        Cell(count(erred), alert=erred > 0),
        Cell(format_time(or_zero(row.get("compute_seconds")))),
        Cell(format_time(or_zero(row.get("thread_cpu_seconds")))),
        Cell(format_time(or_zero(row.get("thread_noncpu_seconds")))),
    )


def prefix_table(metrics: Mapping[str, Any]) -> TableData | None:
    """Per task prefix: tasks, compute time and thread time; None without data."""
    per_prefix = metrics.get("per_prefix")
    if not isinstance(per_prefix, Mapping) or not per_prefix:
        return None
    rows = tuple(
        (
            Cell(str(prefix)),
            Cell("processor" if row.get("processor") else "overhead"),
            *_task_cells(row),
        )
        for prefix, row in per_prefix.items()
    )
    columns = (Column("Prefix", fit="name"), Column("Role"), *TASK_COLUMNS)
    return TableData(PREFIX_TABLE_TITLE, columns, rows)


def worker_table(metrics: Mapping[str, Any]) -> TableData | None:
    """Per worker: tasks and thread time of the span; None without data."""
    per_worker = metrics.get("per_worker")
    if not isinstance(per_worker, Mapping) or not per_worker:
        return None
    lost = {w.get("address") for w in metrics.get("lost_workers") or () if isinstance(w, Mapping)}
    rows = tuple(
        (
            Cell(f"{worker} (lost)", alert=True) if worker in lost else Cell(str(worker)),
            *_task_cells(row),
        )
        for worker, row in per_worker.items()
    )
    note = f"{len(lost & set(per_worker))} of these workers were lost" if lost else None
    return TableData(WORKER_TABLE_TITLE, (Column("Worker", fit="name"), *TASK_COLUMNS), rows, note)
