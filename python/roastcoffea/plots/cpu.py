"""Per-worker CPU, occupancy and executing tasks over time."""

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
    peak_of,
    per_worker_figure,
    percent_ylim,
    worker_series,
)

_CPU_YLABEL = "CPU (% of one core)"


def plot_occupancy_timeline(
    tracking_data: Mapping[str, Any] | None,
    output_path: str | os.PathLike[str] | None = None,
    figsize: tuple[float, float] = (12, 6),
    title: str = "Worker Occupancy Over Time",
    max_legend_entries: int = 5,
) -> tuple[Figure, Axes]:
    """Plot each worker's occupancy, one line per worker.

    Occupancy is the scheduler's estimate of the seconds of work queued on the
    worker (``WorkerState.occupancy``). Unit: seconds, against UTC time.

    Parameters
    ----------
    tracking_data : mapping
        ``metrics["tracking_data"]``; reads ``worker_occupancy`` (s).
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
        If ``worker_occupancy`` is missing or has no reported value.
    """
    fig, ax, _ = per_worker_figure(
        tracking_data, "worker_occupancy", "occupancy (s)", title, figsize, max_legend_entries
    )
    finish(fig, output_path)
    return fig, ax


def plot_executing_tasks_timeline(
    tracking_data: Mapping[str, Any] | None,
    output_path: str | os.PathLike[str] | None = None,
    figsize: tuple[float, float] = (12, 6),
    title: str = "Executing Tasks Per Worker Over Time",
    max_legend_entries: int = 5,
) -> tuple[Figure, Axes]:
    """Plot the number of tasks executing on each worker, one line per worker.

    The count is ``len(WorkerState.executing)`` at the worker's last heartbeat.
    Unit: tasks, against UTC time.

    Parameters
    ----------
    tracking_data : mapping
        ``metrics["tracking_data"]``; reads ``worker_executing`` (tasks).
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
        If ``worker_executing`` is missing or has no reported value.
    """
    fig, ax, _ = per_worker_figure(
        tracking_data, "worker_executing", "executing (tasks)", title, figsize, max_legend_entries
    )
    finish(fig, output_path)
    return fig, ax


def plot_cpu_utilization_per_worker_timeline(
    tracking_data: Mapping[str, Any] | None,
    output_path: str | os.PathLike[str] | None = None,
    figsize: tuple[float, float] = (12, 6),
    title: str = "CPU Utilization Per Worker Over Time",
    max_legend_entries: int = 5,
) -> tuple[Figure, Axes]:
    """Plot each worker process's CPU utilization, one line per worker.

    The value is the worker process's ``cpu_percent`` (psutil): 100 % is one
    core, and a worker with several threads can exceed it, so the y axis
    reaches at least 100 % and grows to the largest value instead of clipping.
    Unit: % of one core, against UTC time.

    Parameters
    ----------
    tracking_data : mapping
        ``metrics["tracking_data"]``; reads ``worker_cpu`` (%).
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
        If ``worker_cpu`` is missing or has no reported value.
    """
    fig, ax, series = per_worker_figure(
        tracking_data, "worker_cpu", _CPU_YLABEL, title, figsize, max_legend_entries
    )
    percent_ylim(ax, peak_of(series))
    finish(fig, output_path)
    return fig, ax


def plot_cpu_utilization_mean_timeline(
    tracking_data: Mapping[str, Any] | None,
    output_path: str | os.PathLike[str] | None = None,
    figsize: tuple[float, float] = (10, 4),
    title: str = "CPU Utilization Over Time",
) -> tuple[Figure, Axes]:
    """Plot the mean CPU utilization across workers, with its min-max band.

    At each sample instant: the mean of ``worker_cpu`` over the workers that
    reported (line) and their minimum to maximum (band). 100 % is one core; the
    y axis reaches at least 100 % and grows to show higher values. Unit: % of
    one core, against UTC time.

    Parameters
    ----------
    tracking_data : mapping
        ``metrics["tracking_data"]``; reads ``worker_cpu`` (%).
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
        If ``worker_cpu`` is missing or has no reported value.
    """
    stats = across_workers(worker_series(tracking_data, "worker_cpu"))
    fig, ax = new_figure(figsize)
    draw_band(ax, stats, COLORS[1], "mean")
    time_axis(ax, _CPU_YLABEL, title)
    percent_ylim(ax, float(stats.high.max()))
    ax.legend(loc="upper left", fontsize="small")
    finish(fig, output_path)
    return fig, ax
