"""Worker memory as a percentage of the worker's memory limit, over time."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from roastcoffea.plots._common import COLORS, finish, new_figure, time_axis
from roastcoffea.plots._series import (
    across_workers,
    draw_band,
    draw_per_worker,
    memory_percent,
    peak_of,
    percent_ylim,
)

_YLABEL = "memory (% of limit)"


def plot_memory_utilization_mean_timeline(
    tracking_data: Mapping[str, Any] | None,
    output_path: str | os.PathLike[str] | None = None,
    figsize: tuple[float, float] = (10, 4),
    title: str = "Memory Utilization Over Time",
) -> tuple[Figure, Axes]:
    """Plot the mean memory utilization across workers, with its min-max band.

    At each sample instant, each worker's ``worker_memory / worker_memory_limit``
    in percent; the line is the mean over the workers that reported, the band
    their minimum to maximum. Unit: % of the memory limit, against UTC time.
    The y axis reaches at least 100 % and grows to show higher values.

    Parameters
    ----------
    tracking_data : mapping
        ``metrics["tracking_data"]``; reads ``worker_memory`` and
        ``worker_memory_limit`` (bytes; samples with a limit of 0 are left out).
    output_path : str or path-like, optional
        Where to save the figure (format from the suffix).
    figsize : tuple of float
        Figure size in inches.
    title : str
        Axes title.

    Returns
    -------
    fig : matplotlib.figure.Figure
    ax : matplotlib.axes.Axes

    Raises
    ------
    ValueError
        If either series is missing or no sample has both a memory and a limit.
    """
    series = memory_percent(tracking_data)
    stats = across_workers(series)
    fig, ax = new_figure(figsize)
    draw_band(ax, stats, COLORS[0], "mean")
    time_axis(ax, _YLABEL, title)
    percent_ylim(ax, float(stats.high.max()))
    ax.legend(loc="upper left", fontsize="small")
    finish(fig, output_path)
    return fig, ax


def plot_memory_utilization_per_worker_timeline(
    tracking_data: Mapping[str, Any] | None,
    output_path: str | os.PathLike[str] | None = None,
    figsize: tuple[float, float] = (12, 6),
    title: str = "Memory Utilization Per Worker Over Time",
    max_legend_entries: int = 5,
) -> tuple[Figure, Axes]:
    """Plot each worker's memory utilization, one line per worker.

    Each line is ``worker_memory / worker_memory_limit`` in percent at the
    worker's samples. Unit: % of the memory limit, against UTC time.

    Parameters
    ----------
    tracking_data : mapping
        ``metrics["tracking_data"]``; reads ``worker_memory`` and
        ``worker_memory_limit`` (bytes; samples with a limit of 0 are left out).
    output_path : str or path-like, optional
        Where to save the figure (format from the suffix).
    figsize : tuple of float
        Figure size in inches.
    title : str
        Axes title.
    max_legend_entries : int
        Largest number of workers shown in a legend; above it, a note gives
        the number of workers instead.

    Returns
    -------
    fig : matplotlib.figure.Figure
    ax : matplotlib.axes.Axes

    Raises
    ------
    ValueError
        If either series is missing or no sample has both a memory and a limit.
    """
    series = memory_percent(tracking_data)
    fig, ax = new_figure(figsize)
    draw_per_worker(ax, series, max_legend_entries, _YLABEL, title)
    percent_ylim(ax, peak_of(series))
    finish(fig, output_path)
    return fig, ax
