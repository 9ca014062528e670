"""The tables of a metrics dictionary, as data.

Each builder takes a metrics dictionary and returns a :class:`TableData`
(title, columns, rows of :class:`Cell`, optional note), or None for a
breakdown without data. The text of every cell is decided here, once; the
renderers only lay it out: :mod:`roastcoffea.report.summary` with rich for the
terminal, :mod:`roastcoffea.report.html` as an HTML page.

A metric that could not be measured is a missing cell (:attr:`Cell.reason`
set, text ``N/A``), the reason taken from ``metrics["unavailable"]``. Bad news
(failed chunks, dropped events, lost workers) is an alert cell. The titles
roastcoffea 0.1.2 had are kept: "Throughput Metrics", "Event Processing
Metrics", "Resource Utilization", "Timing Breakdown", "Chunk Metrics" (with
its "Total Chunks" row).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from roastcoffea.phase_vocabulary import PHASES
from roastcoffea.units import (
    format_byte_rate,
    format_bytes,
    format_number,
    format_percent,
    format_rate,
    format_time,
    units_word,
)

Formatter = Callable[[Any], str]

#: Text of a missing cell.
NA = "N/A"

PREFIX_TABLE_TITLE = "Fine Metrics per Task Prefix"
WORKER_TABLE_TITLE = "Fine Metrics per Worker"
FAILED_CHUNKS_TITLE = "Failed Chunks"
SECTIONS_TITLE = "Sections"


@dataclass(frozen=True)
class Cell:
    """One table cell.

    Attributes
    ----------
    text : str
        What the cell shows (``N/A`` when missing).
    reason : str or None
        Why the value is missing; None for a value.
    alert : bool
        The value is bad news (a failure, a loss).
    indent : int
        Nesting level of a row label under the row above it.
    """

    text: str
    reason: str | None = None
    alert: bool = False
    indent: int = 0

    @property
    def missing(self) -> bool:
        """Whether the value could not be measured."""
        return self.reason is not None


@dataclass(frozen=True)
class Column:
    """A column heading; ``numeric`` columns are right-aligned."""

    name: str
    numeric: bool = False


@dataclass(frozen=True)
class TableData:
    """A titled table: columns, rows of cells, and an optional note under it.

    Raises
    ------
    ValueError
        When a row does not have one cell per column.
    """

    title: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Cell, ...], ...]
    note: str | None = None

    def __post_init__(self) -> None:
        for row in self.rows:
            if len(row) != len(self.columns):
                raise ValueError(
                    f"table {self.title!r}: a row has {len(row)} cells for "
                    f"{len(self.columns)} columns"
                )


# ---- formatting ------------------------------------------------------------------


def number(digits: int = 2, suffix: str = "") -> Formatter:
    """A formatter of numbers with thousands separators, ``digits`` decimals and a suffix."""
    return lambda v: f"{v:,.{digits}f}{suffix}"


def khz(value: Any) -> str:
    """A rate given in kHz, written in the unit its magnitude calls for."""
    return format_rate(1e3 * value)


def per_core(value: Any) -> str:
    """A rate per core given in Hz, written in the unit its magnitude calls for."""
    return format_rate(value, "/core")


def microseconds(value: Any) -> str:
    """A duration given in microseconds, written as Dask writes durations."""
    return format_time(value * 1e-6)


def count(value: Any) -> str:
    """An integer with thousands separators."""
    return f"{int(value):,}"


def percent(value: Any) -> str:
    """A percentage given in percent: ``12.3%``."""
    return format_percent(value)


def nanoseconds(value: Any) -> str:
    """A duration given in nanoseconds, written as every duration is."""
    return format_time(value / 1e9)


def mib(value: Any) -> str:
    """An amount given in MiB, written in the unit its magnitude calls for."""
    return format_bytes(value * 2**20)


def mb_per_second(value: Any) -> str:
    """A rate given in decimal MB/s, written in binary units per second."""
    return format_byte_rate(1e6 * value)


def fraction(value: Any) -> str:
    """A fraction shown as a percentage: ``0.123`` is ``12.3%``."""
    return f"{value:.1%}"


def is_number(value: Any) -> TypeGuard[float]:
    """Whether ``value`` is an int or float (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def missing(reason: str) -> Cell:
    """A cell for a value that could not be measured, and why."""
    return Cell(NA, reason=reason)


def show(value: Any, fmt: Formatter, reason: str = "not measured") -> Cell:
    """``value`` formatted, or a missing cell when it is None or not finite."""
    if value is None:
        return missing(reason)
    if isinstance(value, float) and not math.isfinite(value):
        return missing("not a finite number")
    try:
        return Cell(fmt(value))
    except (TypeError, ValueError):
        return Cell(str(value))


def value_cell(metrics: Mapping[str, Any], key: str, fmt: Formatter) -> Cell:
    """The formatted value of ``metrics[key]``, or a missing cell with the reason."""
    if key not in metrics:
        return missing("not computed")
    reason = (metrics.get("unavailable") or {}).get(key, "not measured")
    return show(metrics[key], fmt, str(reason))


def _or_zero(value: Any) -> float:
    return float(value) if is_number(value) else 0.0


def _label(text: str) -> Cell:
    """A row label; two leading spaces nest it under the row above."""
    stripped = text.lstrip(" ")
    return Cell(stripped, indent=(len(text) - len(stripped)) // 2)


KV_COLUMNS = (Column("Metric"), Column("Value", numeric=True))

Spec = tuple[str, str, Formatter]


def _kv_rows(metrics: Mapping[str, Any], specs: Iterable[Spec]) -> list[tuple[Cell, Cell]]:
    return [(_label(label), value_cell(metrics, key, fmt)) for label, key, fmt in specs]


def _kv_table(title: str, rows: Iterable[tuple[Cell, ...]], note: str | None = None) -> TableData:
    return TableData(title, KV_COLUMNS, tuple(rows), note)


# ---- summary tables --------------------------------------------------------------


def throughput_table(metrics: Mapping[str, Any]) -> TableData:
    """Data rate and bytes read."""
    rate = metrics.get("overall_rate_gbps")
    if is_number(rate) and math.isfinite(rate):
        rate_cell = Cell(f"{rate:.3f} Gbps ({format_byte_rate(rate * 1e9 / 8)})")
    else:
        rate_cell = value_cell(metrics, "overall_rate_gbps", str)
    rows = [(Cell("Data Rate"), rate_cell)]
    rows += _kv_rows(
        metrics,
        (
            ("Processor CPU per Event", "cpu_us_per_event", microseconds),
            ("Events per Core-Second (processor CPU)", "events_per_cpu_second", format_rate),
            ("Bytes Read (compressed)", "bytes_read_compressed", format_bytes),
            ("Bytes Read (uncompressed)", "bytes_read_uncompressed", format_bytes),
            ("Compression Ratio", "compression_ratio", number(2, "x")),
            ("Memory Read (Dask Spans)", "total_bytes_memory_read_dask", format_bytes),
        ),
    )
    note = (
        "Compressed: what coffea requested from the files (its bytesread). Uncompressed: the "
        "baskets (an RNTuple's pages) the chunks decompressed, from the files' own metadata; "
        "a basket serving two chunks counts for each, so the two are not a compression "
        "ratio, which counts each basket once."
    )
    return _kv_table("Throughput Metrics", rows, note)


def event_processing_table(metrics: Mapping[str, Any]) -> TableData:
    """Events and event rates."""
    rows = _kv_rows(
        metrics,
        (
            ("Total Events", "total_events", count),
            ("Event Rate (Wall Time)", "event_rate_wall_khz", khz),
            ("Event Rate (per Processor-Second)", "event_rate_agg_khz", khz),
            ("Event Rate (per Core)", "event_rate_core_hz", per_core),
        ),
    )
    return _kv_table("Event Processing Metrics", rows)


def _peak_per_worker(value: Any) -> str:
    if isinstance(value, Mapping):
        numbers = [v for v in value.values() if is_number(v)]
        return f"{format_bytes(max(numbers))} (max of {len(numbers)} workers)"
    return format_bytes(value)


def _worker_name(worker: Any) -> str:
    if isinstance(worker, Mapping):
        return str(worker.get("name") or worker.get("address"))
    return str(worker)


def resources_table(metrics: Mapping[str, Any]) -> TableData:
    """Workers, cores, memory and efficiency."""
    rows = _kv_rows(
        metrics,
        (
            ("Workers (Time-Averaged)", "avg_workers", number(2)),
            ("Peak Workers", "peak_workers", count),
            ("Cores per Worker", "cores_per_worker", number(2)),
            ("Total Cores (Time-Averaged)", "total_cores", number(2)),
            ("Core Efficiency", "core_efficiency", fraction),
            ("Speedup Factor", "speedup_factor", number(2, "x")),
            ("Processor Time off CPU", "io_overhead_pct", percent),
            ("Peak Memory (cluster)", "peak_memory_bytes", format_bytes),
        ),
    )
    peak = metrics.get("peak_memory_per_worker_bytes")
    if isinstance(peak, Mapping) and not any(is_number(v) for v in peak.values()):
        peak_cell = missing("no memory sample")
    else:
        peak_cell = value_cell(metrics, "peak_memory_per_worker_bytes", _peak_per_worker)
    rows.append((Cell("Peak Memory (per worker)"), peak_cell))
    rows += _kv_rows(
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
            text = f"{len(workers)}: " + ", ".join(map(_worker_name, workers)) if workers else "0"
            rows.append((Cell(label), Cell(text, alert=alert and bool(workers))))
    return _kv_table("Resource Utilization", rows)


def timing_table(metrics: Mapping[str, Any]) -> TableData:
    """Wall time, CPU time and chunks."""
    rows = _kv_rows(
        metrics,
        (
            ("Wall Time", "wall_time", format_time),
            ("Total CPU Time (thread-cpu)", "total_cpu_time", format_time),
            ("Processor Task Time", "processor_task_time_seconds", format_time),
            ("Coffea Process Time", "total_process_time", format_time),
            ("Number of Chunks", "num_chunks", count),
            ("Avg CPU Time/Chunk", "avg_cpu_time_per_chunk", format_time),
        ),
    )
    note = (
        "Wall time: the collector's block, one clock. The other three add up many threads: "
        "total CPU time is the CPU every task of the run used (processor and overhead); "
        "processor task time is the processor tasks' time on the workers, on or off the CPU; "
        "coffea process time is the wall time of the process() calls alone, inside those "
        "tasks (coffea's processtime). So process time is at most processor task time, which "
        "is at most wall time times the threads."
    )
    return _kv_table("Timing Breakdown", rows, note)


def fine_metrics_table(metrics: Mapping[str, Any]) -> TableData:
    """Processor vs overhead thread time, spill, compression and serialization, from the span."""
    rows: list[tuple[Cell, ...]] = []
    prefixes = metrics.get("processor_prefixes")
    if isinstance(prefixes, list):
        shown = ", ".join(str(p) for p in prefixes) if prefixes else "none"
        source = metrics.get("processor_prefix_source")
        rows.append((Cell("Processor Task Prefixes"), Cell(f"{shown} ({source})")))
    rows += _kv_rows(
        metrics,
        (
            ("Processor CPU Time", "processor_cpu_time_seconds", format_time),
            ("Processor Non-CPU Time", "processor_noncpu_time_seconds", format_time),
            ("  CPU %", "processor_cpu_percentage", percent),
            ("  Non-CPU %", "processor_noncpu_percentage", percent),
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
    return _kv_table("Fine Metrics (from Dask Spans)", rows)


PHASES_TITLE = "Processor Phases"
DIAGNOSIS_TITLE = "Diagnosis"
CODECS_TITLE = "Decompression per Codec"


def phases_table(metrics: Mapping[str, Any]) -> TableData | None:
    """Wall and CPU time and share per phase of the processor tasks; None without phases."""
    wall, cpu = metrics.get("phase_wall_seconds"), metrics.get("phase_cpu_seconds")
    shares = metrics.get("phase_share_percent")
    if (
        not isinstance(wall, Mapping)
        or not isinstance(cpu, Mapping)
        or not isinstance(shares, Mapping)
    ):
        return None
    helpers = metrics.get("helper_cpu_seconds")
    helpers = helpers if isinstance(helpers, Mapping) else None
    rows = [
        (
            Cell(str(phase)),
            show(seconds, format_time),
            show(cpu.get(phase), format_time),
            show(shares.get(phase), percent),
            *(() if helpers is None else (_helper_cell(helpers, phase),)),
        )
        for phase, seconds in wall.items()
    ]
    names = ("Wall", "CPU", "Share", *(() if helpers is None else ("Helper Threads' CPU",)))
    columns = (Column("Phase"), *(Column(name, numeric=True) for name in names))
    blank = (Cell(""),) * (len(names) - 1)
    rows += [
        (_label(label), value_cell(metrics, key, fmt), *blank)
        for label, key, fmt in (
            ("Read Bandwidth", "read_bandwidth_mb_s", mb_per_second),
            ("Decompression Output Rate", "decompress_throughput_mb_s", mb_per_second),
            ("Interpretation Rate", "interpret_rate_hz", format_rate),
            ("Data Input (open, read, decompress, interpret)", "io_phase_pct", percent),
        )
    ]
    tasks = show(metrics.get("phase_tasks"), count).text
    note = f"{tasks} task(s) measured; shares of their compute time."
    if helpers is not None:
        runs = show(metrics.get("helper_runs"), count).text
        note += (
            f" {runs} call(s) ran on uproot's executor pools: their CPU is beside the tasks'"
            " own, not in the shares (the tasks' waits for them are)."
        )
    bound = metrics.get("phase_cpu_split_bound_seconds")
    if is_number(bound) and bound > 0:
        note += (
            f" Each phase's CPU is exact to within {format_time(bound)} (CPU split by wall;"
            " the setting roastcoffea.phase-cpu-interval = 0 makes it exact)."
        )
    return TableData(PHASES_TITLE, columns, tuple(rows), note)


def _helper_cell(helpers: Mapping[str, Any], phase: str) -> Cell:
    """A phase's CPU on helper threads; blank for a phase they did not run."""
    return show(helpers[phase], format_time) if phase in helpers else Cell("")


def codecs_table(metrics: Mapping[str, Any]) -> TableData | None:
    """Decompression time, bytes and rate per codec; None without any."""
    codecs = metrics.get("decompress_codecs")
    if not isinstance(codecs, Mapping) or not codecs:
        return None
    rows = tuple(
        (
            Cell(str(name)),
            show(c.get("wall_seconds"), format_time),
            show(c.get("compressed_bytes"), format_bytes),
            show(c.get("bytes"), format_bytes),
            show(c.get("throughput_mb_s"), mb_per_second, "no decompression time"),
        )
        for name, c in sorted(codecs.items())
    )
    columns = (
        Column("Codec"),
        *(Column(name, numeric=True) for name in ("Time", "In", "Out", "Output Rate")),
    )
    return TableData(CODECS_TITLE, columns, rows)


def diagnosis_table(metrics: Mapping[str, Any]) -> TableData | None:
    """The diagnosis findings, one per row; None without phases."""
    findings = metrics.get("diagnosis")
    if not isinstance(findings, list) or not findings:
        return None
    rows = tuple((Cell(str(f.get("message", ""))),) for f in findings if isinstance(f, Mapping))
    return TableData(DIAGNOSIS_TITLE, (Column("Finding"),), rows)


#: Columns of a row of task statistics and digests (per prefix, per worker).
TASK_COLUMNS = tuple(
    Column(name, numeric=True)
    for name in ("Tasks", "Erred", "Compute", "Thread CPU", "Thread Non-CPU")
)


def _task_cells(row: Mapping[str, Any]) -> tuple[Cell, ...]:
    erred = _or_zero(row.get("erred"))
    return (
        Cell(count(_or_zero(row.get("tasks")))),
        Cell(count(erred), alert=erred > 0),
        Cell(format_time(_or_zero(row.get("compute_s")))),
        Cell(format_time(_or_zero(row.get("thread_cpu_seconds")))),
        Cell(format_time(_or_zero(row.get("thread_noncpu_seconds")))),
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
    columns = (Column("Prefix"), Column("Role"), *TASK_COLUMNS)
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
    return TableData(WORKER_TABLE_TITLE, (Column("Worker"), *TASK_COLUMNS), rows, note)


def chunk_table(metrics: Mapping[str, Any]) -> TableData:
    """Chunk counts and per-chunk distributions."""
    rows = [(Cell("Total Chunks"), value_cell(metrics, "num_chunks", count))]
    if is_number(metrics.get("num_successful_chunks")):
        failed = metrics.get("num_failed_chunks") or 0
        rows.append((_label("  Successful"), Cell(count(metrics["num_successful_chunks"]))))
        rows.append((_label("  Failed"), Cell(count(failed), alert=bool(failed))))
    rows += _kv_rows(
        metrics,
        (
            ("Mean Chunk Time (process)", "chunk_duration_mean", format_time),
            ("  Min", "chunk_duration_min", format_time),
            ("  Max", "chunk_duration_max", format_time),
            ("  Std Dev", "chunk_duration_std", format_time),
            ("Mean Task Time (whole task)", "chunk_task_duration_mean", format_time),
            ("Mean Memory Delta", "chunk_mem_delta_mean_mb", mib),
            ("Mean Events/Chunk", "chunk_events_mean", format_number),
            ("  Min", "chunk_events_min", count),
            ("  Max", "chunk_events_max", count),
        ),
    )
    return _kv_table("Chunk Metrics", rows)


def dataset_table(metrics: Mapping[str, Any]) -> TableData | None:
    """Per dataset: chunks, failures, events, durations; None without chunk records."""
    per_dataset = metrics.get("per_dataset")
    if not isinstance(per_dataset, Mapping) or not per_dataset:
        return None
    names = ("Chunks", "Failed", "Events", "Mean Time", "Rate (process)")
    columns = (Column("Dataset"), *(Column(name, numeric=True) for name in names))
    rows = []
    for dataset, row in per_dataset.items():
        failed = _or_zero(row.get("num_failed"))
        rows.append(
            (
                Cell(str(dataset)),
                Cell(count(_or_zero(row.get("num_chunks")))),
                Cell(count(failed), alert=failed > 0),
                show(row.get("total_events"), count, "a chunk lacks the event count"),
                show(row.get("mean_duration"), format_time, "no successful chunk"),
                show(row.get("events_per_second"), format_rate, "no event count or duration"),
            )
        )
    return TableData("Chunks per Dataset", columns, tuple(rows))


def failed_chunks_table(metrics: Mapping[str, Any]) -> TableData | None:
    """The failed chunks and their errors; None when none failed."""
    failed = metrics.get("failed_chunks")
    if not isinstance(failed, list) or not failed:
        return None
    columns = tuple(Column(n) for n in ("Dataset", "File", "Entries", "Worker", "Error"))
    rows = tuple(
        (
            Cell(str(chunk.get("dataset"))),
            Cell(str(chunk.get("file"))),
            Cell(f"{chunk.get('entry_start')}-{chunk.get('entry_stop')}"),
            Cell(str(chunk.get("worker"))),
            Cell(str(chunk.get("error")), alert=True),
        )
        for chunk in failed
    )
    return TableData(FAILED_CHUNKS_TITLE, columns, rows)


#: Section kind -> (unit label, formatter).
_SECTION_KINDS: dict[str, tuple[str, Formatter]] = {
    "timing": ("time", format_time),
    "memory": ("memory", mib),
    "bytes": ("bytes", format_bytes),
    "custom": ("custom", format_number),
}

_SECTION_STATS = ("total", "mean", "min", "max", "std")


def sections_table(metrics: Mapping[str, Any]) -> TableData | None:
    """Per-section statistics across chunks; None without sections."""
    sections = metrics.get("sections")
    if not isinstance(sections, Mapping) or not any(sections.values()):
        return None
    rows = []
    for kind, by_name in sections.items():
        if not isinstance(by_name, Mapping):
            continue
        label, fmt = _SECTION_KINDS.get(kind, (str(kind), format_number))
        for name, stats in by_name.items():
            if not isinstance(stats, Mapping):
                continue
            rows.append(
                (
                    Cell(label),
                    Cell(str(name)),
                    Cell(count(_or_zero(stats.get("count")))),
                    *(show(stats.get(s), fmt, "no numeric value") for s in _SECTION_STATS),
                )
            )
    names = ("Chunks", "Total", "Mean", "Min", "Max", "Std Dev")
    columns = (Column("Kind"), Column("Section"), *(Column(n, numeric=True) for n in names))
    return TableData(SECTIONS_TITLE, columns, tuple(rows))


#: Monitoring counters: (label, key, formatter, positive values are bad news).
_MONITORING_ROWS: tuple[tuple[str, str, Formatter, bool], ...] = (
    ("Transition Events", "events", count, False),
    ("Dropped Events", "dropped_events", count, True),
    ("Hook Calls", "hook_calls", count, False),
    ("Hook Errors", "hook_errors", count, True),
    ("Hook Time per Call (inside the hook)", "hook_ns_per_call", nanoseconds, False),
    ("Worker Payloads", "payloads", count, False),
    ("Payload Bytes", "payload_bytes", format_bytes, False),
    ("Payload Errors", "payload_errors", count, True),
    ("Payload Gaps", "payload_gaps", count, False),
    ("Records", "records", count, False),
    ("Records Dropped", "records_dropped", count, True),
    ("Rows Refused", "rows_refused", count, True),
    ("Prefixes Folded", "prefixes_folded", count, True),
    ("Series Memory", "series_bytes", format_bytes, False),
    ("Flush Time", "flush_seconds", format_time, False),
    ("Collector Exit Time", "exit_seconds", format_time, False),
    ("Snapshot Size", "snapshot_bytes", format_bytes, False),
)


def monitoring_table(metrics: Mapping[str, Any]) -> TableData:
    """What monitoring cost and whether it lost anything."""
    title = "Monitoring Overhead"
    monitoring = metrics.get("monitoring")
    if not isinstance(monitoring, Mapping):
        return _kv_table(title, [(Cell("Monitoring"), value_cell(metrics, "monitoring", str))])
    rows = []
    for label, key, fmt, bad_if_positive in _MONITORING_ROWS:
        value = monitoring.get(key)
        cell = show(value, fmt, "not measured" if key in monitoring else "not reported")
        if bad_if_positive and is_number(value) and value > 0:
            cell = Cell(cell.text, alert=True)
        rows.append((Cell(label), cell))
    errors = monitoring.get("errors")
    if isinstance(errors, Mapping) and errors:
        shown = ", ".join(f"{k}: {v}" for k, v in sorted(errors.items()))
        rows.append((Cell("Caught Errors"), Cell(shown, alert=True)))
    lost = monitoring.get("records_lost")
    if isinstance(lost, Mapping) and lost:
        shown = ", ".join(f"{k} ({v})" for k, v in sorted(lost.items()))
        rows.append((Cell("Records Lost on Workers"), Cell(shown, alert=True)))
    rows += [
        (Cell("Collector Error"), Cell(str(m), alert=True))
        for m in monitoring.get("collector_errors") or ()
    ]
    rows += [(Cell("Note"), Cell(str(note))) for note in monitoring.get("notes") or ()]
    if is_number(metrics.get("phase_clock_seconds")):
        rows.append((Cell("Phase Clock (estimated)"), _phase_clock_cell(metrics)))
    if is_number(metrics.get("instrument_seconds_per_chunk")):
        rows.append((Cell("Chunk Instrumentation (measured)"), _instrument_cell(metrics)))
    if is_number(metrics.get("monitoring_seconds_per_chunk")):
        rows.append((Cell("Cost per Chunk"), _per_chunk_cell(metrics)))
    return _kv_table(title, rows)


def _text(metrics: Mapping[str, Any], key: str, fmt: Formatter) -> str:
    """A value's text inside a sentence: formatted, or n/a."""
    return show(metrics.get(key), fmt).text


def _instrument_cell(metrics: Mapping[str, Any]) -> Cell:
    per_chunk = _text(metrics, "instrument_seconds_per_chunk", format_time)
    total = _text(metrics, "instrument_seconds", format_time)
    return Cell(f"{per_chunk} per chunk ({total} in all)")


def _per_chunk_cell(metrics: Mapping[str, Any]) -> Cell:
    share = metrics.get("monitoring_percent")
    of_tasks = f"{share:.2f}% of the chunks' task time; " if is_number(share) else ""
    parts = "instrumentation + phase clock" if metrics.get("phase_tasks") else "instrumentation"
    return Cell(
        f"{_text(metrics, 'monitoring_seconds_per_chunk', format_time)} "
        f"({of_tasks}{parts}, their own code: a lower bound)"
    )


def _phase_clock_cell(metrics: Mapping[str, Any]) -> Cell:
    seconds = _text(metrics, "phase_clock_seconds", format_time)
    share = _text(metrics, "phase_clock_percent", number(2, "%"))
    switches = _text(metrics, "phase_clock_switches", count)
    return Cell(f"{seconds} ({share} of processor time, {switches} hooked calls)")


def unavailable_table(metrics: Mapping[str, Any]) -> TableData | None:
    """Every metric that could not be measured and why; None when all were."""
    unavailable = metrics.get("unavailable")
    if not isinstance(unavailable, Mapping) or not unavailable:
        return None
    rows = tuple((Cell(str(k)), Cell(str(v))) for k, v in sorted(unavailable.items()))
    columns = (Column("Metric"), Column("Why it is not available"))
    return TableData("Metrics Not Measured", columns, rows)


# ---- what to change: the wall split, the tail, the reads, the cost per event -------

WALL_SPLIT_TITLE = "Where the Wall Time Went"
TAIL_TITLE = "Chunks in the Tail"
READS_TITLE = "Shape of the Reads per File"
COST_TITLE = "Processor CPU per Event by Dataset and Phase"
#: Chunks of the tail shown (the longest first).
TAIL_ROWS = 10

_STAGE_LABELS = {
    "startup": "Start-up (to the first processor task)",
    "steady": "Steady (every thread busy)",
    "tail": "Tail (fewer tasks than threads)",
    "finish": "Finish (last task to exit)",
}


def wall_split_table(metrics: Mapping[str, Any]) -> TableData | None:
    """The four stages of the wall time with their idle thread-seconds, and the bounds."""
    split = metrics.get("wall_split")
    if not isinstance(split, Mapping):
        return None
    total = sum(_or_zero(stage.get("seconds")) for stage in split.values())
    columns = (
        Column("Stage"),
        Column("Wall", numeric=True),
        Column("Share", numeric=True),
        Column("Idle Thread-Seconds", numeric=True),
    )
    rows = [
        (
            Cell(label),
            Cell(format_time(split[stage]["seconds"])),
            Cell(percent(100.0 * split[stage]["seconds"] / total) if total else NA),
            Cell(format_time(split[stage]["idle_thread_seconds"])),
        )
        for stage, label in _STAGE_LABELS.items()
        if stage in split
    ]
    packing = metrics.get("packing_bound_seconds")
    longest = metrics.get("longest_chunk_seconds")
    note = (
        "Idle: a thread running no processor task. The processing (first task's start to "
        f"the last one's end) took {format_time(_or_zero(metrics.get('processing_seconds')))}; "
        "it cannot take less than the processor tasks' time over the threads "
        f"({format_time(_or_zero(packing))}, perfect packing) nor the longest chunk "
        f"({format_time(_or_zero(longest))})."
    )
    return TableData(WALL_SPLIT_TITLE, columns, tuple(rows), note)


def tail_table(metrics: Mapping[str, Any]) -> TableData | None:
    """The chunks running in the tail, longest first, against the median, with their cause."""
    chunks = metrics.get("tail_chunks")
    findings = metrics.get("diagnosis") or []
    if not isinstance(chunks, list) or not any(f.get("rule") == "tail" for f in findings):
        return None  # a tail too short to be a finding
    columns = (
        Column("Chunk"),
        Column("Worker"),
        Column("Duration", numeric=True),
        Column("vs Median", numeric=True),
        Column("Cause (phase vs its median)"),
    )
    rows = []
    for chunk in chunks[:TAIL_ROWS]:
        ratio = chunk.get("vs_median")
        cause = chunk.get("cause")
        cause_ratio = chunk.get("cause_vs_median")
        rows.append(
            (
                Cell(f"{chunk.get('dataset')}: {_short_file(chunk.get('file'))}"),
                Cell(_worker_name(chunk.get("worker"))),
                Cell(format_time(chunk["seconds"])),
                Cell(f"{ratio:.1f}x" if is_number(ratio) else NA, alert=_slow(ratio)),
                Cell(_tail_cause(ratio, cause, cause_ratio)),
            )
        )
    more = len(chunks) - TAIL_ROWS
    note = f"{more} more chunks ran in the tail." if more > 0 else None
    return TableData(TAIL_TITLE, columns, tuple(rows), note)


def _tail_cause(ratio: Any, cause: Any, cause_ratio: Any) -> str:
    if not _slow(ratio):
        return "not slow"
    if cause is None:
        return "no phase measured"
    return f"{cause} ({cause_ratio:.1f}x)" if is_number(cause_ratio) else str(cause)


def _slow(ratio: Any) -> bool:
    return is_number(ratio) and ratio >= 2.0


def _short_file(name: Any) -> str:
    return str(name).rsplit("/", 1)[-1] if name is not None else NA


def reads_table(metrics: Mapping[str, Any]) -> TableData | None:
    """Per file: requests, their size, the metadata fetched at every open, amplification."""
    shapes = metrics.get("read_shapes")
    if not isinstance(shapes, Mapping) or not shapes:
        return None
    units = " or ".join(sorted({str(s.get("storage_unit") or "basket") for s in shapes.values()}))
    used = units_word(units).capitalize()
    names = ("Chunks", "Req./Chunk", "Bytes/Req.", "Open/Chunk", used, "Metadata", "Amplif.")
    columns = (Column("File"), *(Column(name, numeric=True) for name in names))
    rows = []
    for name, shape in shapes.items():
        spread = shape.get("bytes_per_request") or {}
        chunks, opened = shape.get("chunks"), shape.get("open_bytes")
        per_chunk = opened / chunks if chunks and opened is not None else None
        rows.append(
            (
                Cell(_short_file(name) + (" (remote)" if shape.get("remote") else "")),
                show(chunks, count, "not recorded"),
                show(shape.get("requests_per_chunk"), format_number, "not recorded"),
                show(spread.get("median"), format_bytes, "no request"),
                show(per_chunk, format_bytes, "not recorded"),
                show(shape.get("basket_bytes"), format_bytes, "not recorded"),
                show(shape.get("metadata_percent"), percent, "no byte fetched"),
                show(shape.get("amplification"), number(2, "x"), f"no {units_word(units)} used"),
            )
        )
    note = (
        "Req.: uproot's num_requests of the tasks (a vectored read of several ranges is one); "
        "bytes per request: the median chunk's. Open: bytes fetched before process() (the "
        f"file and its tree's metadata), again at every chunk. {used}: bytes of the "
        f"{units_word(units)} the chunks used; metadata: the open's share of the bytes "
        f"fetched; amplification: bytes fetched after the open per byte of those "
        f"{units_word(units)}."
    )
    return TableData(READS_TITLE, columns, tuple(rows), note)


HOT_LINES_TITLE = "Hot Lines of the User's Code (Dask's profiler)"


def hot_lines_table(metrics: Mapping[str, Any]) -> TableData | None:
    """The user's functions taking most of the user-code samples, with their file:line."""
    lines = metrics.get("hot_lines")
    if not isinstance(lines, list) or not lines:
        return None
    columns = (
        Column("Function"),
        Column("File:Line"),
        Column("Own Share", numeric=True),
        Column("With Callees", numeric=True),
    )
    rows = tuple(
        (
            Cell(str(h["function"])),
            Cell(f"{h['file']}:{h['line']}"),
            Cell(percent(h["share_percent"])),
            Cell(percent(h["inclusive_percent"])),
        )
        for h in lines
    )
    samples = metrics.get("user_profile_samples")
    note = (
        f"Shares of the {count(round(_or_zero(samples)))} samples Dask's profiler took in the "
        "user's own code (every 10 ms of each processor task; reading and building arrays "
        "excluded). Own: in the function itself and the native code it calls; with callees: "
        "also in the user's functions it calls. Line: the function's first line (Dask keys "
        "samples by function); <dynamic-code>: code pickled by value, as a notebook's."
    )
    return TableData(HOT_LINES_TITLE, columns, rows, note)


def cost_table(metrics: Mapping[str, Any]) -> TableData | None:
    """Thread-CPU microseconds per event per dataset (rows) and phase (columns)."""
    table = metrics.get("cost_per_event_us")
    if not isinstance(table, Mapping) or not table:
        return None
    phases = [p for p in (*PHASES, "all") if any(p in row for row in table.values())]
    columns = (
        Column("Dataset"),
        *(Column("All Phases" if p == "all" else p.title(), numeric=True) for p in phases),
    )
    rows = tuple(
        (Cell(str(dataset)), *(show(row.get(p), microseconds, "not measured") for p in phases))
        for dataset, row in table.items()
    )
    note = "Thread CPU of the processor tasks per event, by phase (the phase records)."
    return TableData(COST_TITLE, columns, rows, note)


#: Every table builder of the summary, in its order.
TABLE_BUILDERS: tuple[Callable[[Mapping[str, Any]], TableData | None], ...] = (
    throughput_table,
    event_processing_table,
    resources_table,
    timing_table,
    diagnosis_table,
    wall_split_table,
    tail_table,
    cost_table,
    hot_lines_table,
    reads_table,
    phases_table,
    codecs_table,
    fine_metrics_table,
    prefix_table,
    worker_table,
    chunk_table,
    dataset_table,
    failed_chunks_table,
    sections_table,
    monitoring_table,
)


def build_tables(metrics: Mapping[str, Any]) -> list[TableData]:
    """Every table of the summary, in order (breakdowns without data are left out)."""
    tables = (build(metrics) for build in TABLE_BUILDERS)
    return [table for table in tables if table is not None]


# ---- run metadata ----------------------------------------------------------------

#: Top-level ``metadata.json`` entries shown in the "Measurement" table.
_MEASUREMENT_KEYS = (
    ("Name", "name"),
    ("Start (UTC)", "start_utc"),
    ("End (UTC)", "end_utc"),
    ("Elapsed", "elapsed_time_seconds"),
    ("Saved (UTC)", "saved_utc"),
    ("Native Data File", "native_file"),
    ("Chunk Records File", "chunks_file"),
    ("Layout", "format"),
    ("Schema Version", "schema_version"),
)

#: Titles of the dict-valued metadata entries roastcoffea writes.
_METADATA_SECTIONS = {
    "versions": "Software Versions",
    "cluster": "Cluster Shape",
    "span": "Dask Span",
    "collector": "Collector Settings",
}


def _plain(value: Any) -> str:
    """A metadata value as text: lists joined, numbers with separators."""
    if isinstance(value, (list, tuple, set, frozenset)):
        return ", ".join(_plain(v) for v in value) if value else "none"
    if isinstance(value, bool) or value is None:
        return "yes" if value else ("no" if value is False else NA)
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _metadata_cell(key: str, value: Any) -> Cell:
    if value is None:
        return missing("not recorded")
    if key.endswith("_bytes") and is_number(value):
        return Cell(format_bytes(value))
    if key.endswith("_seconds") and is_number(value):
        return Cell(format_time(value))
    return Cell(_plain(value))


def _label_of(key: str) -> str:
    """``"memory_limit_bytes"`` as ``"Memory limit"``: a metadata key read as words.

    The unit suffix goes: :func:`_metadata_cell` writes the value with its unit.
    """
    for unit in ("_bytes", "_seconds"):
        key = key.removesuffix(unit)
    words = key.replace("_", " ").strip()
    return words[:1].upper() + words[1:]


def _dict_table(title: str, data: Mapping[str, Any], names: bool = False) -> TableData:
    """A metadata section; ``names``: its keys are names (packages) and stay as written."""
    rows = [
        (Cell(str(key) if names else _label_of(str(key))), _metadata_cell(str(key), value))
        for key, value in data.items()
    ]
    return TableData(title, (Column("Entry"), Column("Value")), tuple(rows))


def metadata_tables(metadata: Mapping[str, Any]) -> list[TableData]:
    """The run metadata (``metadata.json``) as tables.

    One "Measurement" table of the top-level entries, then one table per
    dict-valued entry (software versions, cluster shape, span, collector
    settings, and any the caller added).
    """
    top = [
        (Cell(label), _metadata_cell(key, metadata[key]))
        for label, key in _MEASUREMENT_KEYS
        if key in metadata
    ]
    known = {key for _, key in _MEASUREMENT_KEYS} | {"t0", "t1"}
    nested = []
    for key, value in metadata.items():
        if isinstance(value, Mapping):
            title = _METADATA_SECTIONS.get(key, _label_of(str(key)))
            nested.append(_dict_table(title, value, names=key == "versions"))
        elif key not in known:
            top.append((Cell(_label_of(str(key))), _metadata_cell(str(key), value)))
    if not top:
        return nested
    return [TableData("Measurement", (Column("Entry"), Column("Value")), tuple(top)), *nested]
