"""The summary of a metrics dictionary as rich tables.

Every table has the two columns of roastcoffea 0.1.2 ("Metric", "Value")
except the breakdowns (per prefix, per worker, per dataset, sections), which
are tables of their own. A metric that could not be measured shows as
``N/A (reason)``, the reason taken from ``metrics["unavailable"]``. The titles
roastcoffea 0.1.2 had are kept: "Throughput Metrics", "Event Processing
Metrics", "Resource Utilization", "Timing Breakdown", "Chunk Metrics" (with
its "Total Chunks" row).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from rich.console import Console
from rich.table import Table

#: Console width when printing to a pipe or file, so no column is cut.
WIDE = 120
#: Rows of the longest breakdowns (workers, failed chunks) before "... more".
MAX_ROWS = 20

Formatter = Callable[[Any], str]


# ---- formatting ------------------------------------------------------------------


def format_bytes(value: float) -> str:
    """Bytes with a binary unit (B, KiB, MiB, GiB, TiB, PiB)."""
    value = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024:
            return f"{value:.0f} B" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1024
    return f"{value:.2f} PiB"


def format_time(seconds: float) -> str:
    """``X.XXs`` under a minute, ``Mm Ss`` under an hour, else ``Hh Mm Ss``."""
    seconds = float(seconds)
    if abs(seconds) < 60:
        return f"{seconds:.3g}s" if abs(seconds) < 1 else f"{seconds:.2f}s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{int(minutes)}m {secs:.0f}s"
    hours, minutes = divmod(minutes, 60)
    return f"{int(hours)}h {int(minutes)}m {secs:.0f}s"


def _number(digits: int = 2, suffix: str = "") -> Formatter:
    return lambda v: f"{v:,.{digits}f}{suffix}"


def _count(v: Any) -> str:
    return f"{int(v):,}"


def _percent(v: Any) -> str:
    return f"{v:.1f}%"


def _fraction(v: Any) -> str:
    return f"{v:.1%}"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _na(reason: str) -> str:
    return f"[dim]N/A ({reason})[/dim]"


def cell(metrics: dict[str, Any], key: str, fmt: Formatter) -> str:
    """The formatted value of ``key``, or ``N/A (reason)``."""
    value = metrics.get(key)
    if value is None:
        if key in metrics:
            return _na(metrics.get("unavailable", {}).get(key, "not measured"))
        return _na("not computed")
    if _is_number(value) and isinstance(value, float) and not math.isfinite(value):
        return _na("not a finite number")
    try:
        return fmt(value)
    except (TypeError, ValueError):
        return str(value)


def _table(title: str) -> Table:
    table = Table(title=title, header_style="bold cyan")
    table.add_column("Metric", style="cyan", no_wrap=True)
    table.add_column("Value", style="magenta")
    return table


def _rows(
    table: Table, metrics: dict[str, Any], rows: Iterable[tuple[str, str, Formatter]]
) -> None:
    for label, key, fmt in rows:
        table.add_row(label, cell(metrics, key, fmt))


def _or_zero(value: Any) -> float:
    return float(value) if _is_number(value) else 0.0


# ---- the tables -------------------------------------------------------------------


def format_throughput_table(metrics: dict[str, Any]) -> Table:
    """Data rate and bytes read."""
    table = _table("Throughput Metrics")
    rate = metrics.get("overall_rate_gbps")
    if _is_number(rate):
        table.add_row("Data Rate", f"{rate:.3f} Gbps ({rate * 1000 / 8:.1f} MB/s)")
    else:
        table.add_row("Data Rate", cell(metrics, "overall_rate_gbps", str))
    _rows(
        table,
        metrics,
        (
            ("Bytes Read (compressed)", "bytes_read_compressed", format_bytes),
            ("Bytes Read (uncompressed)", "bytes_read_uncompressed", format_bytes),
            ("Compression Ratio", "compression_ratio", _number(3)),
            ("Memory Read (Dask Spans)", "total_bytes_memory_read_dask", format_bytes),
        ),
    )
    return table


def format_event_processing_table(metrics: dict[str, Any]) -> Table:
    """Events and event rates."""
    table = _table("Event Processing Metrics")
    _rows(
        table,
        metrics,
        (
            ("Total Events", "total_events", _count),
            ("Event Rate (Wall Time)", "event_rate_wall_khz", _number(2, " kHz")),
            ("Event Rate (Aggregated)", "event_rate_agg_khz", _number(2, " kHz")),
            ("Event Rate (per Core)", "event_rate_core_hz", _number(1, " Hz/core")),
        ),
    )
    return table


def format_resources_table(metrics: dict[str, Any]) -> Table:
    """Workers, cores, memory and efficiency."""
    table = _table("Resource Utilization")
    _rows(
        table,
        metrics,
        (
            ("Workers (Time-Averaged)", "avg_workers", _number(2)),
            ("Peak Workers", "peak_workers", _count),
            ("Cores per Worker", "cores_per_worker", _number(2)),
            ("Total Cores (Time-Averaged)", "total_cores", _number(2)),
            ("Core Efficiency", "core_efficiency", _fraction),
            ("Speedup Factor", "speedup_factor", _number(2, "x")),
            ("I/O Overhead", "io_overhead_pct", _percent),
            ("Peak Memory (cluster)", "peak_memory_bytes", format_bytes),
            ("Peak Memory (per worker)", "peak_memory_per_worker_bytes", _peak_per_worker),
            ("Avg Memory (per worker)", "avg_memory_per_worker_bytes", format_bytes),
        ),
    )
    lost = metrics.get("lost_workers")
    if isinstance(lost, list):
        table.add_row(
            "Lost Workers",
            "0" if not lost else f"[red]{len(lost)}[/red]: " + ", ".join(_lost(w) for w in lost),
        )
    return table


def _peak_per_worker(value: Any) -> str:
    if isinstance(value, dict):
        numbers = [v for v in value.values() if _is_number(v)]
        if not numbers:
            return _na("no memory sample")
        return f"{format_bytes(max(numbers))} (max of {len(numbers)} workers)"
    return format_bytes(value)


def _lost(worker: Any) -> str:
    if isinstance(worker, dict):
        return str(worker.get("name") or worker.get("address"))
    return str(worker)


def format_timing_table(metrics: dict[str, Any]) -> Table:
    """Wall time, CPU time and chunks."""
    table = _table("Timing Breakdown")
    _rows(
        table,
        metrics,
        (
            ("Wall Time", "wall_time", format_time),
            ("Total CPU Time (thread-cpu)", "total_cpu_time", format_time),
            ("Processor Task Time", "processor_task_time_seconds", format_time),
            ("Coffea Process Time", "total_process_time", format_time),
            ("Number of Chunks", "num_chunks", _count),
            ("Avg CPU Time/Chunk", "avg_cpu_time_per_chunk", format_time),
        ),
    )
    return table


def format_fine_metrics_table(metrics: dict[str, Any]) -> Table:
    """Processor vs overhead thread time, compression and serialization, from the span."""
    table = _table("Fine Metrics (from Dask Spans)")
    prefixes = metrics.get("processor_prefixes")
    source = metrics.get("processor_prefix_source")
    if isinstance(prefixes, list):
        shown = ", ".join(prefixes) if prefixes else "none"
        table.add_row("Processor Task Prefixes", f"{shown} ({source})")
    _rows(
        table,
        metrics,
        (
            ("Processor CPU Time", "processor_cpu_time_seconds", format_time),
            ("Processor Non-CPU Time", "processor_noncpu_time_seconds", format_time),
            ("  CPU %", "processor_cpu_percentage", _percent),
            ("  Non-CPU %", "processor_noncpu_percentage", _percent),
            ("Overhead CPU Time", "overhead_cpu_time_seconds", format_time),
            ("Overhead Non-CPU Time", "overhead_noncpu_time_seconds", format_time),
            ("Disk Read (spill)", "disk_read_bytes", format_bytes),
            ("Disk Write (spill)", "disk_write_bytes", format_bytes),
            ("Compression Overhead", "total_compression_overhead_seconds", format_time),
            ("  • Compress", "compression_time_seconds", format_time),
            ("  • Decompress", "decompression_time_seconds", format_time),
            ("Serialization Overhead", "total_serialization_overhead_seconds", format_time),
            ("  • Serialize", "serialization_time_seconds", format_time),
            ("  • Deserialize", "deserialization_time_seconds", format_time),
        ),
    )
    return table


def format_prefix_table(metrics: dict[str, Any]) -> Table | None:
    """Per task prefix: tasks, compute time and thread time; None without data."""
    per_prefix = metrics.get("per_prefix")
    if not isinstance(per_prefix, dict) or not per_prefix:
        return None
    table = Table(title="Fine Metrics per Task Prefix", header_style="bold cyan")
    for name in ("Prefix", "Role"):
        table.add_column(name, justify="left")
    _add_task_columns(table)
    for prefix, row in per_prefix.items():
        role = "processor" if row.get("processor") else "overhead"
        table.add_row(str(prefix), role, *_task_cells(row))
    return table


def format_worker_table(metrics: dict[str, Any]) -> Table | None:
    """Per worker: tasks and thread time of the span; None without data."""
    per_worker = metrics.get("per_worker")
    if not isinstance(per_worker, dict) or not per_worker:
        return None
    lost = {w.get("address") for w in metrics.get("lost_workers") or () if isinstance(w, dict)}
    table = Table(title="Fine Metrics per Worker", header_style="bold cyan")
    table.add_column("Worker", justify="left")
    _add_task_columns(table)
    for i, (worker, row) in enumerate(per_worker.items()):
        if i == MAX_ROWS:
            table.add_row(f"... {len(per_worker) - MAX_ROWS} more", *[""] * len(TASK_COLUMNS))
            break
        name = f"{worker} [red](lost)[/red]" if worker in lost else str(worker)
        table.add_row(name, *_task_cells(row))
    return table


#: Columns of a row of task statistics and digests (per prefix, per worker).
TASK_COLUMNS = ("Tasks", "Erred", "Compute", "Thread CPU", "Thread Non-CPU")


def _add_task_columns(table: Table) -> None:
    for name in TASK_COLUMNS:
        table.add_column(name, justify="right")


def _task_cells(row: dict[str, Any]) -> tuple[str, ...]:
    return (
        _count(_or_zero(row.get("tasks"))),
        _count(_or_zero(row.get("erred"))),
        format_time(_or_zero(row.get("compute_s"))),
        format_time(_or_zero(row.get("thread_cpu_seconds"))),
        format_time(_or_zero(row.get("thread_noncpu_seconds"))),
    )


def format_chunk_metrics_table(metrics: dict[str, Any]) -> Table:
    """Chunk counts and per-chunk distributions."""
    table = _table("Chunk Metrics")
    table.add_row("Total Chunks", cell(metrics, "num_chunks", _count))
    if _is_number(metrics.get("num_successful_chunks")):
        failed = metrics.get("num_failed_chunks") or 0
        table.add_row("  • Successful", _count(metrics["num_successful_chunks"]))
        table.add_row("  • Failed", f"[red]{failed}[/red]" if failed else "0")
    _rows(
        table,
        metrics,
        (
            ("Mean Chunk Time (process)", "chunk_duration_mean", format_time),
            ("  • Min", "chunk_duration_min", format_time),
            ("  • Max", "chunk_duration_max", format_time),
            ("  • Std Dev", "chunk_duration_std", format_time),
            ("Mean Task Time (whole task)", "chunk_task_duration_mean", format_time),
            ("Mean Memory Delta", "chunk_mem_delta_mean_mb", _number(1, " MiB")),
            ("Mean Events/Chunk", "chunk_events_mean", _number(0)),
            ("  • Min", "chunk_events_min", _count),
            ("  • Max", "chunk_events_max", _count),
        ),
    )
    return table


def format_dataset_table(metrics: dict[str, Any]) -> Table | None:
    """Per dataset: chunks, failures, events, durations; None without chunk records."""
    per_dataset = metrics.get("per_dataset")
    if not isinstance(per_dataset, dict) or not per_dataset:
        return None
    table = Table(title="Chunks per Dataset", header_style="bold cyan")
    for name in ("Dataset", "Chunks", "Failed", "Events", "Mean Time", "Events/s (process)"):
        table.add_column(name, justify="left" if name == "Dataset" else "right")

    def opt(value: Any, fmt: Formatter) -> str:
        return fmt(value) if _is_number(value) else "[dim]N/A[/dim]"

    for dataset, row in per_dataset.items():
        failed = row.get("num_failed") or 0
        table.add_row(
            str(dataset),
            _count(_or_zero(row.get("num_chunks"))),
            f"[red]{failed}[/red]" if failed else "0",
            opt(row.get("total_events"), _count),
            opt(row.get("mean_duration"), format_time),
            opt(row.get("events_per_second"), _number(0)),
        )
    return table


def format_failed_chunks_table(metrics: dict[str, Any]) -> Table | None:
    """The failed chunks and their errors; None when none failed."""
    failed = metrics.get("failed_chunks")
    if not isinstance(failed, list) or not failed:
        return None
    table = Table(title="Failed Chunks", header_style="bold red")
    for name in ("Dataset", "File", "Entries", "Worker", "Error"):
        table.add_column(name)
    for i, chunk in enumerate(failed):
        if i == MAX_ROWS:
            table.add_row(f"... {len(failed) - MAX_ROWS} more", "", "", "", "")
            break
        table.add_row(
            str(chunk.get("dataset")),
            str(chunk.get("file")),
            f"{chunk.get('entry_start')}-{chunk.get('entry_stop')}",
            str(chunk.get("worker")),
            str(chunk.get("error")),
        )
    return table


#: Section kind -> (unit label, formatter).
_SECTION_KINDS: dict[str, tuple[str, Formatter]] = {
    "timing": ("time", format_time),
    "memory": ("memory", _number(2, " MiB")),
    "bytes": ("bytes", format_bytes),
    "custom": ("custom", _number(4)),
}


def format_sections_table(metrics: dict[str, Any]) -> Table | None:
    """Per-section statistics across chunks; None without sections."""
    sections = metrics.get("sections")
    if not isinstance(sections, dict) or not any(sections.values()):
        return None
    table = Table(title="Sections", header_style="bold cyan")
    for name in ("Kind", "Section", "Chunks", "Total", "Mean", "Min", "Max", "Std Dev"):
        table.add_column(name, justify="left" if name in ("Kind", "Section") else "right")
    for kind, by_name in sections.items():
        if not isinstance(by_name, dict):
            continue
        label, fmt = _SECTION_KINDS.get(kind, (str(kind), _number(4)))
        for name, stats in by_name.items():
            if not isinstance(stats, dict):
                continue

            def show(stat: str, stats: dict[str, Any] = stats, fmt: Formatter = fmt) -> str:
                value = stats.get(stat)
                return fmt(value) if _is_number(value) else "[dim]N/A[/dim]"

            table.add_row(
                label,
                str(name),
                _count(_or_zero(stats.get("count"))),
                *(show(stat) for stat in ("total", "mean", "min", "max", "std")),
            )
    return table


def format_monitoring_table(metrics: dict[str, Any]) -> Table:
    """What monitoring cost and whether it lost anything."""
    table = _table("Monitoring Overhead")
    monitoring = metrics.get("monitoring")
    if not isinstance(monitoring, dict):
        table.add_row("Monitoring", cell(metrics, "monitoring", str))
        return table

    def row(label: str, key: str, fmt: Formatter, bad_if_positive: bool = False) -> None:
        value = monitoring.get(key)
        if value is None:
            text = _na("not measured" if key in monitoring else "not reported")
        else:
            text = fmt(value)
            if bad_if_positive and _is_number(value) and value > 0:
                text = f"[red]{text}[/red]"
        table.add_row(label, text)

    row("Transition Events", "events", _count)
    row("Dropped Events", "dropped_events", _count, bad_if_positive=True)
    row("Hook Calls", "hook_calls", _count)
    row("Hook Errors", "hook_errors", _count, bad_if_positive=True)
    row("Hook Time per Call", "hook_ns_per_call", _number(0, " ns"))
    row("Worker Payloads", "payloads", _count)
    row("Payload Bytes", "payload_bytes", format_bytes)
    row("Payload Errors", "payload_errors", _count, bad_if_positive=True)
    row("Payload Gaps", "payload_gaps", _count)
    row("Records", "records", _count)
    row("Records Dropped", "records_dropped", _count, bad_if_positive=True)
    row("Rows Refused", "rows_refused", _count, bad_if_positive=True)
    row("Series Memory", "series_bytes", format_bytes)
    row("Flush Time", "flush_seconds", format_time)
    row("Collector Exit Time", "exit_seconds", format_time)
    row("Snapshot Size", "snapshot_bytes", format_bytes)
    errors = monitoring.get("errors")
    if isinstance(errors, dict) and errors:
        shown = ", ".join(f"{k}: {v}" for k, v in sorted(errors.items()))
        table.add_row("Caught Errors", f"[red]{shown}[/red]")
    for message in monitoring.get("collector_errors") or ():
        table.add_row("Collector Error", f"[red]{message}[/red]")
    for note in monitoring.get("notes") or ():
        table.add_row("Note", str(note))
    return table


def summary_tables(metrics: dict[str, Any]) -> list[Table]:
    """Every table of the summary, in print order (breakdowns without data are left out)."""
    tables: list[Table | None] = [
        format_throughput_table(metrics),
        format_event_processing_table(metrics),
        format_resources_table(metrics),
        format_timing_table(metrics),
        format_fine_metrics_table(metrics),
        format_prefix_table(metrics),
        format_worker_table(metrics),
        format_chunk_metrics_table(metrics),
        format_dataset_table(metrics),
        format_failed_chunks_table(metrics),
        format_sections_table(metrics),
        format_monitoring_table(metrics),
    ]
    return [t for t in tables if t is not None]


def print_summary(metrics: dict[str, Any], console: Console | None = None) -> None:
    """Print :func:`summary_tables` with a blank line between tables.

    Parameters
    ----------
    metrics : dict
        A metrics dictionary (``MetricsCollector.get_metrics()`` or a loaded
        measurement).
    console : rich.console.Console, optional
        Default: a console on stdout, 120 columns wide when stdout is not a
        terminal.
    """
    if console is None:
        console = Console()
        if not console.is_terminal:
            console = Console(width=max(WIDE, console.width))
    for table in summary_tables(metrics):
        console.print(table)
        console.print()
