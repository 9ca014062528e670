"""Summary bars of efficiency and resources, one unit per panel.

roastcoffea 0.1.2 drew a percentage next to a speedup factor (and workers next
to gigabytes) on one y axis; here each quantity with its own unit has its own
panel. A value that could not be measured is shown as "N/A" with the reason
from ``metrics["unavailable"]``, never as a bar of height 0.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any

import numpy as np
from matplotlib.axes import Axes

from roastcoffea.plots._common import COLORS, count_axis, figure, legend, new_figure
from roastcoffea.plots._types import FigureAxes, MetricsLike, Size
from roastcoffea.units import byte_unit

#: A bar of a summary panel: (label, value or None, color).
_Bar = tuple[str, float | None, str]


def _value(metrics: Mapping[str, Any], key: str, scale: float = 1.0) -> float | None:
    """``metrics[key] * scale``, or None when the value is missing."""
    value = metrics.get(key)
    return None if value is None else float(value) * scale


def _reason(metrics: Mapping[str, Any], key: str) -> str:
    """Why ``metrics[key]`` is missing, as far as the metrics say."""
    reason = (metrics.get("unavailable") or {}).get(key)
    return f"{key}: {reason}" if reason else f"{key} not measured"


def _check(metrics: Mapping[str, Any] | None, keys: tuple[str, ...]) -> Mapping[str, Any]:
    """``metrics``, or ValueError naming ``keys`` when it is None or has none of them."""
    if metrics is None:
        raise ValueError(f"metrics is None: nothing to plot (needs {', '.join(keys)})")
    if all(metrics.get(key) is None for key in keys):
        reasons = "; ".join(_reason(metrics, key) for key in keys)
        raise ValueError(f"metrics has none of {', '.join(keys)} to plot ({reasons})")
    return metrics


def _bar_panel(
    ax: Axes, bars: list[_Bar], reasons: list[str], ylabel: str, fmt: str, title: str
) -> None:
    """Bars with their values written on top; "N/A" and its reason where a value is None."""
    x = np.arange(len(bars))
    for i, ((label, value, color), reason) in enumerate(zip(bars, reasons, strict=True)):
        if value is None:
            text = "N/A\n" + textwrap.fill(reason, 24)
            ax.text(i, 0.5, text, ha="center", va="center", transform=ax.get_xaxis_transform())
            continue
        container = ax.bar(i, value, 0.6, color=color, label=label)
        ax.bar_label(container, labels=[format(value, fmt)], padding=3, fontweight="bold")
    ax.set_xticks(x, [label for label, _, _ in bars])
    ax.set_xlim(-0.6, len(bars) - 0.4)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3, axis="y")
    ax.set_ylim(0, max([value or 0.0 for _, value, _ in bars] + [0.0]) * 1.2 or 1.0)


@figure(figsize=(10, 6))
def plot_efficiency_summary(metrics: MetricsLike, figsize: Size) -> FigureAxes:
    """Plot core efficiency and speedup, each on its own axes.

    Left: the core efficiency, ``total_cpu_time / (total_cores * wall_time)``,
    in % (the y axis reaches at least 100 %). Right: the speedup factor,
    processor task seconds per wall second, in times (x), with the ideal speedup (the
    number of cores) as a dashed line when known. Units: % and times (x). The
    figure title is "Efficiency Metrics Summary".

    Reads ``core_efficiency`` (fraction), ``speedup_factor`` (times), ``total_cores``
    (threads) and ``unavailable``.

    Returns
    -------
    fig : matplotlib.figure.Figure
    ax : matplotlib.axes.Axes
        The efficiency axes, one Axes as roastcoffea 0.1.2 returned; the
        speedup axes is ``fig.axes[1]``.

    Raises
    ------
    ValueError
        If ``metrics`` is None or has neither ``core_efficiency`` nor
        ``speedup_factor`` (the message gives the reasons).
    """
    keys = ("core_efficiency", "speedup_factor")
    metrics = _check(metrics, keys)
    efficiency = _value(metrics, "core_efficiency", 100.0)
    speedup = _value(metrics, "speedup_factor")
    fig, axes = new_figure(figsize, 1, 2)
    _bar_panel(
        axes[0],
        [("core efficiency", efficiency, COLORS[0])],
        [_reason(metrics, keys[0])],
        "core efficiency (%)",
        ".1f",
        "CPU time / available core time",
    )
    axes[0].set_ylim(0, max(100.0, (efficiency or 0.0) * 1.1))
    _bar_panel(
        axes[1],
        [("speedup", speedup, COLORS[1])],
        [_reason(metrics, keys[1])],
        "speedup (\N{MULTIPLICATION SIGN})",
        ".2f",
        "processor task time / wall time",
    )
    cores = _value(metrics, "total_cores")
    if cores:
        axes[1].axhline(cores, color="gray", linestyle="--", label=f"ideal: {cores:.3g} cores")
        axes[1].set_ylim(0, max(cores, speedup or 0.0) * 1.2)
        legend(axes[1])
    fig.suptitle("Efficiency Metrics Summary")
    return fig, axes[0]


@figure(figsize=(10, 6))
def plot_resource_utilization(metrics: MetricsLike, figsize: Size) -> FigureAxes:
    """Plot workers, cores and peak memory, each on its own axes.

    Panels: the time-averaged and peak number of workers (workers), the
    time-averaged total of worker threads (threads), and the cluster-wide peak
    memory (max over time of the sum over workers). Units: workers, threads
    and GiB. The figure title is "Resource Utilization Summary".

    Reads ``avg_workers``, ``peak_workers``, ``total_cores``, ``peak_memory_bytes`` (bytes)
    and ``unavailable``.

    Returns
    -------
    fig : matplotlib.figure.Figure
    ax : matplotlib.axes.Axes
        The workers axes, one Axes as roastcoffea 0.1.2 returned; the cores
        and memory axes are ``fig.axes[1]`` and ``fig.axes[2]``.

    Raises
    ------
    ValueError
        If ``metrics`` is None or has none of ``avg_workers``, ``total_cores``
        and ``peak_memory_bytes`` (the message gives the reasons).
    """
    metrics = _check(metrics, ("avg_workers", "total_cores", "peak_memory_bytes"))
    factor, unit = byte_unit(_value(metrics, "peak_memory_bytes") or 0.0)
    panels = (
        (
            [("average", "avg_workers", 1.0), ("peak", "peak_workers", 1.0)],
            "workers",
            ".3g",
            "Workers",
        ),
        ([("average", "total_cores", 1.0)], "cores (threads)", ".3g", "Cores"),
        ([("peak", "peak_memory_bytes", 1 / factor)], f"memory ({unit})", ".3g", "Cluster memory"),
    )
    fig, axes = new_figure(figsize, 1, 3)
    for ax, (entries, ylabel, fmt, title) in zip(axes, panels, strict=True):
        bars = [
            (label, _value(metrics, key, scale), COLORS[i % len(COLORS)])
            for i, (label, key, scale) in enumerate(entries)
        ]
        reasons = [_reason(metrics, key) for _, key, _ in entries]
        _bar_panel(ax, bars, reasons, ylabel, fmt, title)
    count_axis(axes[0])
    count_axis(axes[1])
    fig.suptitle("Resource Utilization Summary")
    return fig, axes[0]
