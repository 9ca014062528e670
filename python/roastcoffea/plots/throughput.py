"""Active tasks over time, and the data throughput of the chunks being processed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from matplotlib.axes import Axes

from roastcoffea.plots._common import (
    COLORS,
    Clock,
    caption,
    figure,
    legend,
    new_figure,
    require,
    require_key,
    say_instead,
    time_axis,
)
from roastcoffea.plots._series import (
    InstantStats,
    across_workers,
    all_zero,
    draw_worker_counts,
    per_worker_plot,
    worker_series,
)
from roastcoffea.plots._types import FigureAxes, Size, TrackingData


@per_worker_plot(
    "worker_active_tasks",
    "tasks assigned (executing or waiting)",
    "Worker Activity Over Time",
    "``worker_active_tasks`` (tasks)",
    whole=True,
)
def plot_worker_activity_timeline() -> None:
    """Plot the number of tasks assigned to each worker, one line per worker.

    The count is ``len(WorkerState.processing)``: tasks the scheduler has sent
    to the worker, executing or waiting there. Unit: tasks, against seconds since the block's start.
    """


@figure(figsize=(10, 5), title="Total Active Tasks Over Time")
def plot_total_active_tasks_timeline(
    tracking_data: TrackingData, figsize: Size, title: str, *, origin: float | None = None
) -> FigureAxes:
    """Plot the number of tasks assigned to all workers together.

    At each sample instant, the sum of ``worker_active_tasks`` over the workers
    that reported, as a line with the area under it filled: tasks the
    scheduler has sent to a worker, executing there or waiting for a thread,
    so it can exceed the threads. The cluster's threads (Σ ``worker_cores``)
    are drawn beside it as a dashed line. Unit: tasks, against seconds since the block's start.

    Reads ``worker_active_tasks`` (tasks) and ``worker_cores`` (threads).

    Raises
    ------
    ValueError
        If ``worker_active_tasks`` is missing or has no reported value.
    """
    assigned = worker_series(tracking_data, "worker_active_tasks")
    stats = across_workers(assigned)
    fig, ax = new_figure(figsize)
    if not stats.total.any():
        ax.set_title(title)
        say_instead(ax, all_zero(assigned))
        return fig, ax
    clock = Clock.of(origin, stats.times)
    ax.fill_between(clock(stats.times), 0, stats.total, color=COLORS[2], alpha=0.3)
    ax.plot(clock(stats.times), stats.total, color=COLORS[2], linewidth=1.8, label="all workers")
    time_axis(ax, "tasks assigned (executing or waiting)", title, clock, whole=True)
    threads = _threads(tracking_data)
    if threads is not None:
        ax.plot(
            clock(threads.times),
            threads.total,
            color="gray",
            linestyle="--",
            drawstyle="steps-post",
            label="threads (tasks that can execute at once)",
        )
        legend(ax)
    peak = max(float(stats.total.max()), float(threads.total.max()) if threads else 0.0)
    ax.set_ylim(0, 1.1 * peak or 1.0)
    return fig, ax


def _threads(tracking_data: TrackingData) -> InstantStats | None:
    """The cluster's threads at each instant (Σ ``worker_cores``), or None if not tracked."""
    try:
        return across_workers(worker_series(tracking_data, "worker_cores"))
    except ValueError:
        return None


def _throughput_steps(
    chunk_info: Mapping[Any, Any],
) -> tuple[np.ndarray, np.ndarray, int, int]:
    """The exact throughput of the chunks as a step function of time.

    Each chunk with a measured ``bytes_read`` and ``t_end > t_start`` reads at
    the constant rate ``bytes_read * 8 / 1e9 / (t_end - t_start)`` Gbit/s while
    it runs. The total rate only changes at chunk boundaries, so it is the
    running sum of +rate at each start and -rate at each end.

    Returns
    -------
    edges : numpy.ndarray
        The distinct chunk boundaries (epoch s), sorted.
    rate : numpy.ndarray
        The total rate (Gbit/s) from ``edges[i]`` until ``edges[i + 1]``
        (0 after the last edge).
    unmeasured : int
        Chunks left out because their ``bytes_read`` is None.
    instant : int
        Chunks left out because they have no duration (``t_end <= t_start``).
    """
    starts, ends, rates = [], [], []
    unmeasured = instant = 0
    for t_start, t_end, bytes_read in chunk_info.values():
        if bytes_read is None:
            unmeasured += 1
        elif t_end <= t_start:
            instant += 1
        else:
            starts.append(t_start)
            ends.append(t_end)
            rates.append(bytes_read * 8 / 1e9 / (t_end - t_start))
    if not rates:
        return np.empty(0), np.empty(0), unmeasured, instant
    edges, slot = np.unique(np.concatenate([starts, ends]), return_inverse=True)
    change = np.zeros(len(edges))
    np.add.at(change, slot, np.concatenate([rates, np.negative(rates)]))
    rate = np.cumsum(change)
    # The running sum returns to zero only up to rounding; do not draw the residue.
    rate[np.abs(rate) < 1e-9 * max(rates)] = 0.0
    return edges, rate, unmeasured, instant


#: Beyond this many chunk boundaries the throughput is drawn as its exact mean over
#: THROUGHPUT_BINS equal time bins: a figure is a few thousand pixels wide, and the
#: full step function would take seconds to render for the same picture.
MAX_THROUGHPUT_STEPS = 4000
THROUGHPUT_BINS = 1000


def _binned(edges: np.ndarray, rate: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """The step function's mean over ``bins`` equal bins: (bin edges, mean rates).

    The integral of a step function is piecewise linear between its edges, so
    interpolating it at the bin edges gives each bin's bytes exactly.
    """
    integral = np.concatenate([[0.0], np.cumsum(rate[:-1] * np.diff(edges))])
    grid = np.linspace(edges[0], edges[-1], bins + 1)
    means = np.diff(np.interp(grid, edges, integral)) / np.diff(grid)
    return grid, np.append(means, 0.0)


def _rate_unit(peak_gbps: float) -> tuple[float, str]:
    """A bit-rate unit suited to rates up to ``peak_gbps``: (factor from Gbit/s, name)."""
    for factor, name in ((1.0, "Gbps"), (1e3, "Mbps"), (1e6, "kbps")):
        if peak_gbps * factor >= 1.0:
            return factor, name
    return 1e9, "bps"


def _note_left_out(ax: Axes, unmeasured: int, instant: int, total: int) -> None:
    """Say which chunks the throughput leaves out, if any."""
    parts = []
    if unmeasured:
        parts.append(f"{unmeasured} of {total} chunks without bytes_read left out")
    if instant:
        parts.append(f"{instant} of {total} chunks without duration left out")
    for part in parts:
        caption(ax, part)


@figure(tracking_data=None, figsize=(12, 6), title="Data Throughput Over Time")
def plot_throughput_timeline(
    chunk_info: Mapping[Any, Any] | None,
    tracking_data: TrackingData,
    figsize: Size,
    title: str,
    *,
    origin: float | None = None,
) -> FigureAxes:
    """Plot the data throughput of the chunks being processed, exactly, over time.

    Each chunk reads at the constant rate ``bytes_read * 8 / 1e9 / duration``
    between its ``t_start`` and ``t_end``; the plot is the sum of the rates of
    the chunks running at each moment, a step function that changes at chunk
    boundaries only (no sampling). Beyond :data:`MAX_THROUGHPUT_STEPS` chunk
    boundaries it is drawn as its exact mean over :data:`THROUGHPUT_BINS` equal
    time bins (the bytes of each bin over its length), and the title says so.
    ``bytes_read`` counts the bytes requested
    during ``process()``. Chunks whose ``bytes_read`` is None (unmeasured) or
    that have no duration are left out, and a note on the plot says how many.
    With ``tracking_data``, the number of workers (its ``worker_counts``) is
    drawn on a second y axis. Unit: bits per second, in Gbps, Mbps, kbps or bps
    (decimal) to suit the largest rate, as the y label says (and workers),
    against seconds since the block's start.

    Parameters
    ----------
    chunk_info : mapping
        ``metrics["chunk_info"]``: ``{(file, entry_start, entry_stop):
        (t_start, t_end, bytes_read)}``, times in epoch seconds (scheduler
        clock), ``bytes_read`` in bytes or None.
    tracking_data : mapping, optional
        ``metrics["tracking_data"]``.

    Returns
    -------
    fig : matplotlib.figure.Figure
    ax : matplotlib.axes.Axes
        The throughput axes (the worker count axes is its twin).

    Raises
    ------
    ValueError
        If ``chunk_info`` is empty or None, if no chunk has a measured
        ``bytes_read`` and a duration, or if ``tracking_data`` is given without
        ``worker_counts``.
    """
    chunk_info = require(chunk_info, "chunk_info (chunk timing)")
    edges, rate, unmeasured, instant = _throughput_steps(chunk_info)
    if not len(edges):
        raise ValueError(
            f"chunk_info has no chunk with a measured bytes_read and a duration "
            f"({unmeasured} without bytes_read, {instant} without duration)"
        )
    counts = (
        None
        if tracking_data is None
        else require_key(tracking_data, "worker_counts", "tracking_data")
    )
    if len(edges) > MAX_THROUGHPUT_STEPS:
        edges, rate = _binned(edges, rate, THROUGHPUT_BINS)
        width = (edges[1] - edges[0]) if len(edges) > 1 else 0.0
        title = f"{title} (mean over {width:.3g} s bins)"
    clock = Clock.of(origin, edges)
    times = clock(edges)
    scale, unit = _rate_unit(float(rate.max()))
    fig, ax = new_figure(figsize)
    ax.fill_between(times, 0, rate * scale, step="post", color=COLORS[0], alpha=0.3)
    ax.plot(times, rate * scale, drawstyle="steps-post", color=COLORS[0], label="throughput")
    time_axis(ax, f"throughput ({unit})", title, clock)
    ax.set_ylim(bottom=0)
    _note_left_out(ax, unmeasured, instant, len(chunk_info))
    if counts is not None:
        _draw_worker_counts(ax, counts, clock)
    return fig, ax


def _draw_worker_counts(ax: Axes, counts: Mapping[Any, int], clock: Clock) -> None:
    """The worker count as a step line on a twin y axis of ``ax``, both in one legend."""
    twin = ax.twinx()
    draw_worker_counts(twin, counts, clock, color=COLORS[3], linestyle="--")
    twin.set_ylabel("workers")
    lines = ax.get_lines() + twin.get_lines()
    labels = [str(line.get_label()) for line in lines]
    legend(ax, twin, handles=lines, labels=labels)
