"""Several measurements side by side: a comparison and a scaling study.

A measurement is given as a metrics dictionary, a measurement directory (read
with :func:`roastcoffea.measurement.load_measurement`, its cluster shape from
``metadata.json``), or a ``(metrics, metadata)`` pair. A value that is None in a
measurement is drawn as missing (no bar or point, an "n/a" mark), never as 0.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine

from roastcoffea.measurement import load_measurement, load_metadata
from roastcoffea.plots._common import COLORS, figure, legend, new_figure
from roastcoffea.plots._series import percent_ylim
from roastcoffea.plots._types import Size

#: What ``measurements`` may hold.
MeasurementLike = (
    Mapping[str, Any] | str | os.PathLike | tuple[Mapping[str, Any], Mapping[str, Any] | None]
)

BAR_WIDTH = 0.38


@dataclass(frozen=True)
class Run:
    """One measurement to compare: its metrics, metadata (None if unknown) and label."""

    metrics: Mapping[str, Any]
    metadata: Mapping[str, Any] | None
    label: str

    def value(self, key: str, scale: float = 1.0) -> float:
        """``metrics[key] * scale``, NaN when missing or None."""
        value = self.metrics.get(key)
        return math.nan if value is None else float(value) * scale

    def cores(self) -> float:
        """Threads of the cluster: the metadata's ``cluster.threads``, else ``total_cores``."""
        cluster = (self.metadata or {}).get("cluster") or {}
        threads = cluster.get("threads")
        return float(threads) if threads is not None else self.value("total_cores")


def _resolve(item: MeasurementLike, index: int) -> Run:
    default = f"run {index + 1}"
    if isinstance(item, (str, os.PathLike)):
        metrics = load_measurement(item)[0]
        return Run(metrics, load_metadata(item), Path(item).name)
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], Mapping):
        metrics, metadata = dict(item[0]), item[1]
        name = (metadata or {}).get("name")
        return Run(metrics, metadata, str(name) if name else default)
    if isinstance(item, Mapping):
        return Run(item, None, default)
    raise TypeError(
        f"measurement {index + 1}: expected a metrics dict, a measurement directory or a "
        f"(metrics, metadata) pair, not {type(item).__name__}"
    )


def resolve_measurements(
    measurements: Sequence[MeasurementLike], labels: Sequence[str] | None = None
) -> list[Run]:
    """The measurements as :class:`Run` objects, loading directories.

    Parameters
    ----------
    measurements : sequence
        Metrics dicts, measurement directories or ``(metrics, metadata)`` pairs.
    labels : sequence of str, optional
        One per measurement; default the directory name (``metadata["name"]``
        of a pair), else ``"run <n>"``.

    Returns
    -------
    list of Run

    Raises
    ------
    ValueError
        When ``measurements`` is empty or ``labels`` has another length.
    TypeError
        For an item of another kind.
    FileNotFoundError
        For a directory that is not a measurement.
    """
    if isinstance(measurements, (str, os.PathLike, Mapping)):
        measurements = [measurements]
    if len(measurements) == 0:
        raise ValueError("no measurements to plot")
    if labels is not None and len(labels) != len(measurements):
        raise ValueError(f"{len(labels)} labels for {len(measurements)} measurements")
    runs = [_resolve(item, i) for i, item in enumerate(measurements)]
    if labels is not None:
        pairs = zip(runs, labels, strict=True)
        runs = [Run(run.metrics, run.metadata, str(label)) for run, label in pairs]
    return runs


def _bars(
    ax: Axes, x: np.ndarray, heights: np.ndarray, label: str, color: str, bottom: Any = None
) -> None:
    """Bars with a legend label; NaN heights are drawn as nothing and marked "n/a"."""
    ax.bar(x, heights, BAR_WIDTH, bottom=bottom, label=label, color=color)
    for position, height in zip(x, heights, strict=True):
        if math.isnan(height):
            ax.annotate(
                "n/a",
                (position, 0),
                xytext=(0, 3),
                textcoords="offset points",
                ha="center",
                fontsize=8,
                color=color,
            )


def _rates_panel(ax: Axes, runs: list[Run], x: np.ndarray) -> None:
    events = np.array([run.value("event_rate_wall_khz") for run in runs])
    gbps = np.array([run.value("overall_rate_gbps") for run in runs])
    _bars(ax, x - BAR_WIDTH / 2, events, "event rate (kHz)", COLORS[0])
    twin = ax.twinx()
    _bars(twin, x + BAR_WIDTH / 2, gbps, "throughput (Gbps)", COLORS[1])
    ax.set_ylabel("event rate (kHz)")
    twin.set_ylabel("throughput (Gbps)")
    ax.set_title("Rates")
    ax.margins(y=0.3)
    twin.margins(y=0.3)
    handles = ax.get_legend_handles_labels()[0] + twin.get_legend_handles_labels()[0]
    legend(ax, twin, handles=handles)


def _efficiency_panel(ax: Axes, runs: list[Run], x: np.ndarray) -> None:
    efficiency = np.array([run.value("core_efficiency", 100.0) for run in runs])
    io_share = np.array([run.value("io_overhead_percent") for run in runs])
    _bars(ax, x - BAR_WIDTH / 2, efficiency, "core efficiency (%)", COLORS[2])
    _bars(ax, x + BAR_WIDTH / 2, io_share, "processor time off CPU (%)", COLORS[3])
    ax.set_ylabel("percent (%)")
    ax.set_title("Efficiency")
    values = np.concatenate([efficiency, io_share])
    percent_ylim(ax, float(np.nanmax(values)) if np.isfinite(values).any() else 0.0)
    legend(ax)


def _thread_seconds(run: Run, part: str) -> float:
    return run.value(f"{part}_cpu_time_seconds") + run.value(f"{part}_noncpu_time_seconds")


def _overhead_panel(ax: Axes, runs: list[Run], x: np.ndarray) -> None:
    processor = np.array([_thread_seconds(run, "processor") for run in runs])
    overhead = np.array([_thread_seconds(run, "overhead") for run in runs])
    _bars(ax, x, processor, "processor (s)", COLORS[0])
    _bars(ax, x, overhead, "overhead (s)", COLORS[1], bottom=np.nan_to_num(processor))
    for position, proc, over in zip(x, processor, overhead, strict=True):
        if not (math.isnan(proc) or math.isnan(over)) and proc + over > 0:
            ax.annotate(
                f"{100 * over / (proc + over):.1f}% overhead",
                (position, proc + over),
                xytext=(0, 3),
                textcoords="offset points",
                ha="center",
                fontsize=8,
            )
    ax.set_ylabel("thread time, CPU + non-CPU (s)")
    ax.set_title("Processor vs Overhead")
    ax.margins(y=0.3)
    legend(ax)


#: Keys drawn by :func:`plot_measurement_comparison`.
COMPARISON_KEYS = (
    "event_rate_wall_khz",
    "overall_rate_gbps",
    "core_efficiency",
    "io_overhead_percent",
    "processor_cpu_time_seconds",
    "processor_noncpu_time_seconds",
    "overhead_cpu_time_seconds",
    "overhead_noncpu_time_seconds",
)


@figure()
def plot_measurement_comparison(
    measurements: Sequence[MeasurementLike],
    labels: Sequence[str] | None = None,
    figsize: Size = (14, 5),
    title: str = "Measurement Comparison",
) -> tuple[Figure, np.ndarray]:
    """Three panels comparing measurements: rates, efficiency, processor vs overhead.

    - Rates: per measurement, ``event_rate_wall_khz`` (kHz, left axis) and
      ``overall_rate_gbps`` (Gbps, right twin axis) as side-by-side bars.
    - Efficiency: ``core_efficiency`` (as %) and ``io_overhead_percent`` (%).
    - Processor vs overhead: stacked bars of processor thread time
      (``processor_cpu_time_seconds + processor_noncpu_time_seconds``, s) and
      overhead thread time (``overhead_cpu_time_seconds +
      overhead_noncpu_time_seconds``, s), annotated with the overhead share.

    A value that is None is drawn as a NaN bar (nothing) marked "n/a".

    Parameters
    ----------
    measurements : sequence
        Metrics dicts, measurement directories or ``(metrics, metadata)`` pairs.
    labels : sequence of str, optional
        One per measurement; default the directory names, else ``"run <n>"``.

    Returns
    -------
    tuple
        ``(fig, axes)``: the three panels; each bar series is a container
        labelled with its quantity and unit (the throughput bars on the rates
        panel's twin axis).

    Raises
    ------
    ValueError
        When there are no measurements, ``labels`` has another length, or no
        measurement has any of :data:`COMPARISON_KEYS`.
    """
    runs = resolve_measurements(measurements, labels)
    if all(run.metrics.get(key) is None for run in runs for key in COMPARISON_KEYS):
        raise ValueError(f"no measurement has any of {', '.join(COMPARISON_KEYS)} to compare")
    fig, axes = new_figure(figsize, 1, 3)
    engine = fig.get_layout_engine()
    if isinstance(engine, ConstrainedLayoutEngine):  # room for the rates' second y axis
        engine.set(wspace=0.12)
    x = np.arange(len(runs), dtype=float)
    _rates_panel(axes[0], runs, x)
    _efficiency_panel(axes[1], runs, x)
    _overhead_panel(axes[2], runs, x)
    for ax in axes:
        ax.set_xticks(x, [run.label for run in runs], rotation=20, ha="right")
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(title)
    return fig, axes


def _scaling_panel(
    ax: Axes, cores: np.ndarray, values: np.ndarray, runs: list[Run], label: str, color: str
) -> None:
    """Points of ``values`` against ``cores``, joined in core order; the runs left out noted."""
    shown = ~(np.isnan(cores) | np.isnan(values))
    order = np.argsort(cores[shown], kind="stable")
    xs, ys = cores[shown][order], values[shown][order]
    ax.plot(xs, ys, "o-", color=color, label=label)
    for run, x, y in zip(np.array(runs, dtype=object)[shown][order], xs, ys, strict=True):
        ax.annotate(run.label, (x, y), xytext=(4, 4), textcoords="offset points", fontsize=8)
    left_out = [run.label for run, ok in zip(runs, shown, strict=True) if not ok]
    note = f"\nnot measured: {', '.join(left_out)}" if left_out else ""
    ax.set_xlabel(f"cores (threads){note}")
    ax.set_ylabel(label)
    ax.grid(True, alpha=0.3)
    ax.margins(x=0.12, y=0.12)


@figure()
def plot_scaling_study(
    measurements: Sequence[MeasurementLike],
    labels: Sequence[str] | None = None,
    figsize: Size = (12, 5),
    title: str = "Scaling Study",
) -> tuple[Figure, np.ndarray]:
    """Event rate and core efficiency against the number of cores, one point per measurement.

    Left: ``event_rate_wall_khz`` (kHz) against cores, with the ideal linear
    scaling from the measurement with the fewest cores (dashed). Right:
    ``core_efficiency`` (%) against cores. Cores are the measurement metadata's
    ``cluster.threads`` when known, else ``metrics["total_cores"]`` (the
    time-averaged threads). A measurement without cores or value is left out
    of that panel and named under its x axis.

    Parameters
    ----------
    measurements, labels
        As :func:`plot_measurement_comparison`.

    Returns
    -------
    tuple
        ``(fig, axes)``: the two panels; the measured line of each is labelled
        ``"event rate (kHz)"`` / ``"core efficiency (%)"``.

    Raises
    ------
    ValueError
        When there are no measurements, ``labels`` has another length, or no
        measurement has cores and an event rate or core efficiency.
    """
    runs = resolve_measurements(measurements, labels)
    cores = np.array([run.cores() for run in runs])
    rates = np.array([run.value("event_rate_wall_khz") for run in runs])
    efficiency = np.array([run.value("core_efficiency", 100.0) for run in runs])
    known = ~np.isnan(cores)
    if not (known & ~(np.isnan(rates) & np.isnan(efficiency))).any():
        raise ValueError(
            "no measurement has cores (metadata cluster.threads or total_cores) together "
            "with event_rate_wall_khz or core_efficiency"
        )
    fig, axes = new_figure(figsize, 1, 2)
    panels = (
        (axes[0], rates, "event rate (kHz)", COLORS[0]),
        (axes[1], efficiency, "core efficiency (%)", COLORS[2]),
    )
    for ax, values, label, color in panels:
        _scaling_panel(ax, cores, values, runs, label, color)
    _ideal_line(axes[0], cores, rates)
    axes[0].set_title("Event rate")
    axes[1].set_title("Core efficiency")
    percent_ylim(axes[1], float(np.nanmax(np.append(efficiency, 0.0))))
    for ax in axes:
        legend(ax)
    fig.suptitle(title)
    return fig, axes


def _ideal_line(ax: Axes, cores: np.ndarray, rates: np.ndarray) -> None:
    """Linear scaling from the measured point with the fewest cores, over the measured cores."""
    shown = ~(np.isnan(cores) | np.isnan(rates)) & (cores > 0)
    if np.count_nonzero(shown) < 2:
        return
    xs, ys = cores[shown], rates[shown]
    base = int(np.argmin(xs))
    span = np.array([xs.min(), xs.max()])
    ax.plot(span, ys[base] * span / xs[base], "--", color="grey", label="ideal (linear)")
