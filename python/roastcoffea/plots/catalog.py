"""Every single-measurement plot, and which of them a metrics dictionary can draw.

:func:`applicable_plots` decides from the data alone: a plot is listed when
the metrics hold what it needs (a series with a reported value, a chunk with the
fields it reads, a measured number), never by drawing it and catching the
error. So a ValueError raised by a listed plot is a bug here, and
:func:`save_plots` lets it propagate.
"""

from __future__ import annotations

import datetime as dt
import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from numbers import Real
from pathlib import Path
from typing import Any, TypeGuard

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from roastcoffea.plots import (
    chunks,
    cpu,
    datasets,
    fine,
    io,
    memory,
    per_task,
    phases,
    profile,
    scaling,
    throughput,
    timeline,
    wall_split,
    workers,
)
from roastcoffea.plots._common import finish

Metrics = Mapping[str, Any]
Draw = Callable[[Metrics], tuple[Figure, Any]]


@dataclass(frozen=True)
class PlotEntry:
    """A plot a metrics dictionary can draw.

    Attributes
    ----------
    name : str
        File stem, e.g. ``"worker_count"``.
    title : str
        The figure's title.
    draw : callable
        ``draw(metrics) -> (fig, ax)``; the figure is not saved.
    """

    name: str
    title: str
    draw: Draw


@dataclass(frozen=True)
class _Spec:
    """A plot of the catalog and the test of whether its data is present."""

    entry: PlotEntry
    present: Callable[[Metrics], bool]


# ---- data presence -----------------------------------------------------------


def _number(value: Any) -> TypeGuard[float]:
    """A finite number (None, NaN and booleans are not)."""
    return isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)


def _instant(value: Any) -> bool:
    """A sample time the timelines can place: a datetime or epoch seconds.

    A measurement of roastcoffea 0.1.2 loads its times as ISO strings, which the
    timelines do not read.
    """
    return isinstance(value, dt.datetime) or _number(value)


def _tracking(metrics: Metrics) -> Mapping[str, Any]:
    data = metrics.get("tracking_data")
    return data if isinstance(data, Mapping) else {}


def _reported(metrics: Metrics, key: str) -> bool:
    """Whether some worker reported a value of ``tracking_data[key]``."""
    series = _tracking(metrics).get(key) or {}
    return any(_instant(t) and _number(value) for points in series.values() for t, value in points)


def _memory_with_limit(metrics: Metrics) -> bool:
    """Whether a worker reported its memory at an instant it had a positive limit."""
    tracking = _tracking(metrics)
    memory = tracking.get("worker_memory") or {}
    limits = tracking.get("worker_memory_limit") or {}
    for worker, points in memory.items():
        limited = {t for t, limit in limits.get(worker, ()) if _number(limit) and limit > 0}
        if any(t in limited and _instant(t) and _number(value) for t, value in points):
            return True
    return False


def _has_worker_counts(metrics: Metrics) -> bool:
    counts = _tracking(metrics).get("worker_counts") or {}
    return bool(counts) and all(_instant(t) for t in counts)


def _chunks(metrics: Metrics) -> list[Mapping[str, Any]]:
    records = metrics.get("raw_chunk_metrics")
    return list(records) if isinstance(records, list) else []


def _chunk_with(metrics: Metrics, fields: Iterable[str], successful: bool = False) -> bool:
    """Whether a chunk record (a successful one if asked) has every field as a number."""
    fields = tuple(fields)
    return any(
        all(_number(record.get(f)) for f in fields)
        for record in _chunks(metrics)
        if not (successful and record.get("error"))
    )


def _finite_list(metrics: Metrics, key: str) -> bool:
    values = metrics.get(key)
    return isinstance(values, list) and any(_number(v) for v in values)


def _measured_chunk_rate(metrics: Metrics) -> bool:
    """Whether a chunk_info entry has a measured ``bytes_read`` and a duration."""
    info = metrics.get("chunk_info")
    if not isinstance(info, Mapping):
        return False
    return any(
        isinstance(value, (tuple, list))
        and len(value) == 3
        and _number(value[0])
        and _number(value[1])
        and value[1] > value[0]
        and _number(value[2])
        for value in info.values()
    )


def _span_activity(metrics: Metrics, activities: tuple[str, ...], unit: str) -> bool:
    """Whether ``raw_span_metrics`` has one of ``activities`` in ``unit`` for a task prefix."""
    span = metrics.get("raw_span_metrics")
    if not isinstance(span, Mapping):
        return False
    return any(
        isinstance(key, tuple)
        and len(key) == 4
        and key[0] in ("execute", "p2p")
        and key[1] != "N/A"
        and key[2] in activities
        and key[3] == unit
        and value is not None
        for key, value in span.items()
    )


def _any_number(metrics: Metrics, keys: tuple[str, ...]) -> bool:
    return any(_number(metrics.get(key)) for key in keys)


def _fine_unit(metrics: Metrics, unit: str) -> bool:
    per_worker = metrics.get("per_worker_fine_metrics")
    if not isinstance(per_worker, Mapping) or not per_worker:
        return False
    return bool(fine.worker_activity_matrix(per_worker, unit)[1])


def _breakdown(metrics: Metrics) -> bool:
    values = [metrics.get(key) for _, _, key in fine.BREAKDOWN_KEYS]
    numbers = [v for v in values if _number(v)]
    return len(numbers) == len(values) and sum(numbers) > 0


def _prefix_times(metrics: Metrics) -> bool:
    per_prefix = metrics.get("per_prefix")
    return isinstance(per_prefix, Mapping) and bool(timeline.timed_prefixes(per_prefix))


def _dataset_durations(metrics: Metrics) -> bool:
    return bool(datasets.durations_per_dataset(_chunks(metrics)))


# ---- drawing -----------------------------------------------------------------


def _throughput(metrics: Metrics) -> tuple[Figure, Any]:
    """Throughput with the worker count on a twin axis when it was tracked."""
    tracking = metrics.get("tracking_data") if _has_worker_counts(metrics) else None
    return throughput.plot_throughput_timeline(
        metrics["chunk_info"], tracking, origin=metrics.get("time_origin")
    )


def _timeline(key: str, plot: Callable[..., tuple[Figure, Any]]) -> Draw:
    """A draw function passing ``metrics[key]`` to a timeline, its origin the block's start."""
    return lambda metrics: plot(metrics[key], origin=metrics.get("time_origin"))


def _phase_timeline(metrics: Metrics) -> tuple[Figure, Any]:
    """The phase timeline, a lane for every thread of every worker (idle ones too)."""
    return phases.plot_phase_timeline(
        metrics["raw_phase_records"],
        origin=metrics.get("time_origin"),
        threads=wall_split.worker_threads(metrics),
    )


def _from(key: str, plot: Callable[..., tuple[Figure, Any]], **options: Any) -> Draw:
    """A draw function passing ``metrics[key]`` to ``plot``."""
    return lambda metrics: plot(metrics[key], **options)


def _whole(plot: Callable[..., tuple[Figure, Any]], **options: Any) -> Draw:
    """A draw function passing the whole metrics dictionary to ``plot``."""
    return lambda metrics: plot(metrics, **options)


def _spec(name: str, title: str, draw: Draw, present: Callable[[Metrics], bool]) -> _Spec:
    return _Spec(PlotEntry(name, title, draw), present)


def _series_spec(name: str, title: str, plot: Callable[..., Any], key: str) -> _Spec:
    return _spec(name, title, _timeline("tracking_data", plot), lambda m: _reported(m, key))


_SECONDS_OVERHEAD = ("compress", "decompress", "serialize", "deserialize")

#: Every single-measurement plot, in report order.
_CATALOG: tuple[_Spec, ...] = (
    _spec(
        "worker_count",
        "Worker Count Over Time",
        _timeline("tracking_data", workers.plot_worker_count_timeline),
        _has_worker_counts,
    ),
    _spec(
        "memory_utilization_mean",
        "Memory Utilization Over Time",
        _timeline("tracking_data", memory.plot_memory_utilization_mean_timeline),
        _memory_with_limit,
    ),
    _spec(
        "memory_utilization_per_worker",
        "Memory Utilization Per Worker Over Time",
        _timeline("tracking_data", memory.plot_memory_utilization_per_worker_timeline),
        _memory_with_limit,
    ),
    _series_spec(
        "cpu_utilization_mean",
        "CPU Utilization Over Time",
        cpu.plot_cpu_utilization_mean_timeline,
        "worker_cpu",
    ),
    _series_spec(
        "cpu_utilization_per_worker",
        "CPU Utilization Per Worker Over Time",
        cpu.plot_cpu_utilization_per_worker_timeline,
        "worker_cpu",
    ),
    _series_spec(
        "occupancy", "Worker Occupancy Over Time", cpu.plot_occupancy_timeline, "worker_occupancy"
    ),
    _series_spec(
        "executing_tasks",
        "Executing Tasks Per Worker Over Time",
        cpu.plot_executing_tasks_timeline,
        "worker_executing",
    ),
    _series_spec(
        "worker_activity",
        "Worker Activity Over Time",
        throughput.plot_worker_activity_timeline,
        "worker_active_tasks",
    ),
    _series_spec(
        "total_active_tasks",
        "Total Active Tasks Over Time",
        throughput.plot_total_active_tasks_timeline,
        "worker_active_tasks",
    ),
    _spec("throughput", "Data Throughput Over Time", _throughput, _measured_chunk_rate),
    _spec(
        "wall_split",
        "Where the Wall Time Went",
        _whole(wall_split.plot_wall_split),
        lambda m: isinstance(m.get("wall_split"), Mapping) and bool(wall_split.task_intervals(m)),
    ),
    _spec(
        "profile_icicle",
        "Processor Task Samples (Dask's Profiler)",
        _whole(profile.plot_profile_icicle),
        lambda m: isinstance(m.get("profile_tree"), Mapping),
    ),
    _spec(
        "prefix_timeline",
        "Task Prefix Timeline",
        _whole(timeline.plot_prefix_timeline),
        _prefix_times,
    ),
    _spec(
        "runtime_distribution",
        "Chunk Runtime Distribution",
        _from("raw_chunk_metrics", chunks.plot_runtime_distribution),
        lambda m: _chunk_with(m, ("duration",), successful=True),
    ),
    _spec(
        "runtime_vs_events",
        "Chunk Runtime vs Number of Events",
        _from("raw_chunk_metrics", chunks.plot_runtime_vs_events),
        lambda m: _chunk_with(m, ("duration", "num_events"), successful=True),
    ),
    _spec(
        "dataset_runtimes",
        "Chunk Runtime per Dataset",
        _from("raw_chunk_metrics", datasets.plot_dataset_runtimes),
        _dataset_durations,
    ),
    _spec(
        "compression_ratio_distribution",
        "Compression Ratio Distribution Across Files",
        _whole(io.plot_compression_ratio_distribution),
        lambda m: _finite_list(m, "compression_ratios"),
    ),
    _spec(
        "data_access_percentage",
        "Bytes Read Percentage Distribution",
        _whole(io.plot_data_access_percentage),
        lambda m: _finite_list(m, "bytes_read_percent_per_file"),
    ),
    _spec(
        "branch_access_per_chunk",
        "Branches Accessed Per Chunk",
        _from("raw_chunk_metrics", io.plot_branch_access_per_chunk),
        lambda m: _chunk_with(m, ("num_branches_accessed",)),
    ),
    _spec(
        "bytes_accessed_per_chunk",
        "Bytes Accessed Per Chunk (Compressed vs Uncompressed)",
        _from("raw_chunk_metrics", io.plot_bytes_accessed_per_chunk),
        lambda m: _chunk_with(m, ("accessed_bytes", "accessed_uncompressed_bytes")),
    ),
    _spec(
        "phase_timeline",
        "Chunk Phase Timeline",
        _phase_timeline,
        lambda m: isinstance(m.get("raw_phase_records"), list) and bool(m["raw_phase_records"]),
    ),
    _spec(
        "phase_shares_per_dataset",
        "Processor Phases per Dataset",
        _whole(phases.plot_phase_shares_per_dataset),
        lambda m: isinstance(m.get("phase_per_dataset"), Mapping) and bool(m["phase_per_dataset"]),
    ),
    _spec(
        "phase_heatmap",
        "Processor Phases per Worker",
        _whole(phases.plot_phase_heatmap),
        lambda m: isinstance(m.get("phase_per_worker"), Mapping) and bool(m["phase_per_worker"]),
    ),
    _spec(
        "processor_overhead_breakdown",
        "Processor vs Overhead Time",
        _whole(fine.plot_processor_overhead_breakdown),
        _breakdown,
    ),
    _spec(
        "fine_metrics_heatmap",
        "Fine Metrics per Worker",
        _whole(fine.plot_fine_metrics_heatmap),
        lambda m: _fine_unit(m, "seconds"),
    ),
    _spec(
        "fine_metrics_bytes_heatmap",
        "Fine Metrics per Worker (bytes)",
        _whole(
            fine.plot_fine_metrics_heatmap, unit="bytes", title="Fine Metrics per Worker (bytes)"
        ),
        lambda m: _fine_unit(m, "bytes"),
    ),
    _spec(
        "per_task_cpu_io",
        "CPU vs Off-CPU Time per Task",
        _from("raw_span_metrics", per_task.plot_per_task_cpu_io),
        lambda m: _span_activity(m, ("thread-cpu", "thread-noncpu"), "seconds"),
    ),
    _spec(
        "per_task_bytes_read",
        "Bytes Read per Task",
        _from("raw_span_metrics", per_task.plot_per_task_bytes_read),
        lambda m: _span_activity(m, ("disk-read",), "bytes"),
    ),
    _spec(
        "per_task_overhead",
        "Compression & Serialization Overhead per Task",
        _from("raw_span_metrics", per_task.plot_per_task_overhead),
        lambda m: _span_activity(m, _SECONDS_OVERHEAD, "seconds"),
    ),
    _spec(
        "efficiency_summary",
        "Efficiency Metrics Summary",
        _whole(scaling.plot_efficiency_summary),
        lambda m: _any_number(m, ("core_efficiency", "speedup_factor")),
    ),
    _spec(
        "resource_utilization",
        "Resource Utilization Summary",
        _whole(scaling.plot_resource_utilization),
        lambda m: _any_number(m, ("avg_workers", "total_cores", "peak_memory_bytes")),
    ),
)

#: Names of every plot of the catalog, in report order.
PLOT_NAMES: tuple[str, ...] = tuple(spec.entry.name for spec in _CATALOG)


def applicable_plots(metrics: Mapping[str, Any]) -> list[PlotEntry]:
    """The single-measurement plots whose data is present in ``metrics``.

    Each plot of the catalog (the 21 plots of roastcoffea 0.1.2, the prefix
    timeline, the dataset runtimes, the processor/overhead breakdown and the
    fine-metrics heatmaps in seconds and in bytes) is listed when ``metrics``
    holds its data: e.g. the timelines need ``tracking_data`` with a reported
    value of their series, the chunk plots chunk records with the fields they
    read, the fine-metrics plots ``per_worker_fine_metrics`` /
    ``raw_span_metrics`` entries of the right activity and unit.

    Parameters
    ----------
    metrics : mapping
        A metrics dictionary, live (``MetricsCollector.get_metrics()``) or
        loaded (``load_measurement``).

    Returns
    -------
    list of PlotEntry
        In report order (:data:`PLOT_NAMES`); names are unique.
    """
    return [spec.entry for spec in _CATALOG if spec.present(metrics)]


def save_plots(
    metrics: Mapping[str, Any],
    directory: str | os.PathLike[str],
    fmt: str = "png",
    on_figure: Callable[[int, int], None] | None = None,
) -> list[Path]:
    """Draw every applicable plot and save it as ``directory/<name>.<fmt>``.

    Figures are made without pyplot and dropped after saving, so nothing is
    left open.

    Parameters
    ----------
    metrics : mapping
        A metrics dictionary, live or loaded.
    directory : path-like
        Created if missing; existing files of the same names are replaced.
    fmt : str, default "png"
        A format matplotlib's Agg canvas writes (png, pdf, svg, ...).
    on_figure : callable, optional
        Called as ``on_figure(done, total)`` after each figure is saved.

    Returns
    -------
    list of pathlib.Path
        The files written, in :func:`applicable_plots` order.

    Raises
    ------
    ValueError
        For a format matplotlib cannot write, or (a bug of
        :func:`applicable_plots`) from a listed plot that finds its data missing.
    """
    fmt = fmt.lower().lstrip(".")
    if fmt not in FigureCanvasAgg.get_supported_filetypes():
        supported = ", ".join(sorted(FigureCanvasAgg.get_supported_filetypes()))
        raise ValueError(f"cannot save plots as {fmt!r}; supported formats: {supported}")
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    entries = applicable_plots(metrics)
    for entry in entries:
        fig, _ = entry.draw(metrics)
        path = out / f"{entry.name}.{fmt}"
        finish(fig, path)
        written.append(path)
        if on_figure is not None:
            on_figure(len(written), len(entries))
    return written
