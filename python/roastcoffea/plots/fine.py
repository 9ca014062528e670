"""Dask's fine performance metrics: per worker, and processor against overhead."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.ticker import FuncFormatter, MaxNLocator

from roastcoffea.phase_vocabulary import is_phase_activity
from roastcoffea.plots._common import COLORS, figure, label_axes, legend, new_figure, require_key
from roastcoffea.plots._types import FigureAxes, Size
from roastcoffea.units import byte_unit, format_bytes, format_time

#: Cells annotated with their value only up to this many (beyond, text would overlap).
MAX_ANNOTATED_CELLS = 400

#: Axis label of a heatmap's colorbar per activity unit.
UNIT_LABELS = {"seconds": "time (s)", "bytes": "bytes", "count": "count"}

#: Keys of the processor / overhead split, in drawing order (segment, bar, key).
BREAKDOWN_KEYS = (
    ("CPU", "processor", "processor_cpu_time_seconds"),
    ("non-CPU", "processor", "processor_noncpu_time_seconds"),
    ("CPU", "overhead", "overhead_cpu_time_seconds"),
    ("non-CPU", "overhead", "overhead_noncpu_time_seconds"),
)


def worker_activity_matrix(
    per_worker: Mapping[str, Mapping[tuple, float]], unit: str
) -> tuple[list[str], list[str], np.ndarray]:
    """Workers by Dask's activities of ``unit``, summed over context and prefix.

    The phase clock's activities are left out: the phase figures draw them.

    Parameters
    ----------
    per_worker : mapping
        ``metrics["per_worker_fine_metrics"]``: ``{worker: {(context, prefix,
        activity, unit): value}}``.
    unit : str
        The unit kept (``"seconds"``, ``"bytes"``, ``"count"``).

    Returns
    -------
    tuple
        ``(workers, activities, matrix)``: workers sorted by address, activities
        by decreasing total (then name), and ``matrix[w, a]`` in ``unit`` (0 where a
        worker has no such activity).
    """
    sums: dict[str, dict[str, float]] = {}
    for worker, entries in per_worker.items():
        row = sums.setdefault(str(worker), {})
        for (_context, _prefix, activity, key_unit), value in entries.items():
            if is_phase_activity(str(activity)):  # drawn by the phase figures
                continue
            if key_unit == unit and value is not None and np.isfinite(value):
                row[str(activity)] = row.get(str(activity), 0.0) + float(value)
    totals: dict[str, float] = {}
    for row in sums.values():
        for activity, value in row.items():
            totals[activity] = totals.get(activity, 0.0) + value
    activities = sorted(totals, key=lambda a: (-totals[a], a))
    workers = sorted(sums)
    matrix = np.array(
        [[sums[w].get(a, 0.0) for a in activities] for w in workers], dtype=float
    ).reshape(len(workers), len(activities))
    return workers, activities, matrix


def _cell_text(value: float, unit: str) -> str:
    """``value`` short: bytes as :func:`~roastcoffea.units.format_bytes`, large numbers without
    an exponent."""
    if unit == "bytes":
        return format_bytes(value)
    if unit == "seconds":
        return format_time(value)
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def _annotate_cells(ax: Axes, matrix: np.ndarray, unit: str) -> None:
    """Write each cell's value, dark on light cells and light on dark ones."""
    peak = float(matrix.max()) if matrix.size else 0.0
    for (row, col), value in np.ndenumerate(matrix):
        light = peak > 0 and value / peak > 0.6
        ax.text(
            col,
            row,
            _cell_text(float(value), unit),
            ha="center",
            va="center",
            fontsize=8,
            color="black" if light else "white",
        )


@figure(figsize=(12, 6), title="Fine Metrics per Worker")
def plot_fine_metrics_heatmap(
    metrics: dict[str, Any], figsize: Size, title: str, unit: str = "seconds"
) -> FigureAxes:
    """Heatmap of Dask's fine performance metrics, one row per worker.

    Cell ``(worker, activity)`` is the worker's sum, over every context and task
    prefix, of the activity's values in ``unit`` (e.g. ``thread-cpu`` seconds).
    The color scale runs from 0 to the largest cell; cells are annotated with
    their value (up to :data:`MAX_ANNOTATED_CELLS` cells; bytes with a binary
    prefix) and the colorbar carries the unit.

    Reads ``per_worker_fine_metrics`` (``{worker: {(context, prefix, activity, unit):
    value}}``).

    Parameters
    ----------
    unit : str, default "seconds"
        The activity unit shown; activities in other units are left out.

    Returns
    -------
    tuple
        ``(fig, ax)``; the heatmap is ``ax.images[0]``, its array the matrix.

    Raises
    ------
    ValueError
        When ``per_worker_fine_metrics`` is missing or empty, or holds no
        activity in ``unit``.
    """
    per_worker = require_key(metrics, "per_worker_fine_metrics", "metrics")
    workers, activities, matrix = worker_activity_matrix(per_worker, unit)
    if not activities:
        raise ValueError(f"metrics['per_worker_fine_metrics'] has no activity in {unit!r}")
    fig, ax = new_figure(figsize)
    # The scale starts at 0: every activity total is a non-negative amount.
    peak = float(matrix.max())
    image = ax.imshow(
        matrix, aspect="auto", cmap="viridis", interpolation="nearest", vmin=0, vmax=peak or 1
    )
    ax.set_xticks(range(len(activities)), activities, rotation=30, ha="right")
    ax.set_yticks(range(len(workers)), workers)
    label_axes(ax, f"activity ({unit})", "worker", title)
    if matrix.size <= MAX_ANNOTATED_CELLS:
        _annotate_cells(ax, matrix, unit)
    colorbar = fig.colorbar(image, ax=ax)
    if unit == "bytes":
        factor, name = byte_unit(peak)
        colorbar.set_ticks(list(np.asarray(MaxNLocator().tick_values(0, peak / factor)) * factor))
        colorbar.formatter = FuncFormatter(lambda value, _: f"{value / factor:,.4g}")
        colorbar.set_label(f"bytes ({name})")
        colorbar.update_ticks()
        colorbar.ax.set_ylim(0, peak or 1)
    else:
        colorbar.set_label(UNIT_LABELS.get(unit, unit))
    return fig, ax


def _breakdown_values(metrics: Mapping[str, Any]) -> list[float]:
    """The four seconds of :data:`BREAKDOWN_KEYS`; ValueError naming one that is missing."""
    values = []
    reasons = metrics.get("unavailable") or {}
    for _segment, _bar, key in BREAKDOWN_KEYS:
        value = metrics.get(key)
        if value is None:
            reason = reasons.get(key)
            why = f": {reason}" if reason else ""
            raise ValueError(f"metrics[{key!r}] is not available{why}")
        values.append(float(value))
    return values


@figure(figsize=(10, 6), title="Processor vs Overhead Time")
def plot_processor_overhead_breakdown(
    metrics: dict[str, Any], figsize: Size, title: str
) -> FigureAxes:
    """Stacked bars of processor and overhead thread time, split into CPU and non-CPU.

    Two bars, ``processor`` and ``overhead``, each stacking its CPU seconds
    (bottom) and non-CPU seconds (top). Each segment is annotated with its
    share of the total thread time (processor + overhead, %) when it is tall
    enough to hold it, each bar with its seconds and share.

    Reads ``processor_cpu_time_seconds``, ``processor_noncpu_time_seconds``,
    ``overhead_cpu_time_seconds``, ``overhead_noncpu_time_seconds`` (s) and ``unavailable``
    for the reason of a missing one.

    Returns
    -------
    tuple
        ``(fig, ax)``; ``ax.containers`` holds the CPU and the non-CPU bars.

    Raises
    ------
    ValueError
        When one of the four keys is None or missing (naming it and its reason),
        or all four are 0.
    """
    proc_cpu, proc_noncpu, over_cpu, over_noncpu = _breakdown_values(metrics)
    total = proc_cpu + proc_noncpu + over_cpu + over_noncpu
    if total <= 0:
        raise ValueError("metrics has no processor or overhead thread time to plot (all 0 s)")
    bars = ["processor", "overhead"]
    cpu = np.array([proc_cpu, over_cpu])
    noncpu = np.array([proc_noncpu, over_noncpu])
    # A segment thinner than this share of the tallest bar has no room for its label.
    labelled = 0.05 * float((cpu + noncpu).max())
    fig, ax = new_figure(figsize)
    for heights, bottom, label, color in (
        (cpu, None, "CPU", COLORS[0]),
        (noncpu, cpu, "non-CPU", COLORS[1]),
    ):
        container = ax.bar(bars, heights, bottom=bottom, label=label, color=color, width=0.5)
        shares = [f"{100 * h / total:.1f}%" if h >= labelled else "" for h in heights]
        ax.bar_label(container, labels=shares, label_type="center", fontsize=9)
    for x, height in enumerate(cpu + noncpu):
        ax.annotate(
            f"{format_time(height)} ({100 * height / total:.1f}%)",
            (x, height),
            xytext=(0, 4),
            textcoords="offset points",
            ha="center",
            va="bottom",
        )
    ax.set_ylabel("thread time (s)")
    ax.set_title(title)
    ax.set_ylim(0, 1.12 * float((cpu + noncpu).max()))
    ax.grid(True, axis="y", alpha=0.3)
    legend(ax)
    return fig, ax
