"""The table of :mod:`roastcoffea.metrics.workers` (and efficiency): "Resource Utilization"."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roastcoffea.report.tables.cells import (
    Cell,
    TableData,
    count,
    fraction,
    is_number,
    kv_rows,
    kv_table,
    missing,
    number,
    percent,
    value_cell,
    worker_name,
)
from roastcoffea.units import format_bytes


def _peak_per_worker(value: Any) -> str:
    if isinstance(value, Mapping):
        numbers = [v for v in value.values() if is_number(v)]
        return f"{format_bytes(max(numbers))} (max of {len(numbers)} workers)"
    return format_bytes(value)


def resources_table(metrics: Mapping[str, Any]) -> TableData:
    """Workers, cores, memory and efficiency."""
    rows = kv_rows(
        metrics,
        (
            ("Workers (Time-Averaged)", "avg_workers", number(2)),
            ("Peak Workers", "peak_workers", count),
            ("Cores per Worker", "cores_per_worker", number(2)),
            ("Total Cores (Time-Averaged)", "total_cores", number(2)),
            ("Core Efficiency", "core_efficiency", fraction),
            ("Speedup Factor", "speedup_factor", number(2, "x")),
            ("Processor Time off CPU", "io_overhead_percent", percent),
            ("Peak Memory (cluster)", "peak_memory_bytes", format_bytes),
        ),
    )
    peak = metrics.get("peak_memory_per_worker_bytes")
    if isinstance(peak, Mapping) and not any(is_number(v) for v in peak.values()):
        peak_cell = missing("no memory sample")
    else:
        peak_cell = value_cell(metrics, "peak_memory_per_worker_bytes", _peak_per_worker)
    rows.append((Cell("Peak Memory (per worker)"), peak_cell))
    rows += kv_rows(
        metrics, (("Avg Memory (per worker)", "avg_memory_per_worker_bytes", format_bytes),)
    )
    for label, key, alert in (
        ("Lost Workers", "lost_workers", True),
        ("Restarted Workers", "restarted_workers", True),
        ("Retired Workers", "retired_workers", False),
        ("Unmonitored Workers", "unmonitored_workers", True),
    ):
        workers = metrics.get(key)
        if isinstance(workers, list):
            text = f"{len(workers)}: " + ", ".join(map(worker_name, workers)) if workers else "0"
            rows.append((Cell(label), Cell(text, alert=alert and bool(workers))))
    return kv_table("Resource Utilization", rows)
