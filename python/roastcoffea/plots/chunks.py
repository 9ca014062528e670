"""Chunk runtimes: their distribution, and how they grow with the number of events."""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes

from roastcoffea.plots._common import (
    COLORS,
    caption,
    figure,
    label_axes,
    legend,
    new_figure,
    say_instead,
)
from roastcoffea.plots._series import chunk_records, draw_distribution, has_number, successful
from roastcoffea.plots._types import ChunkRecords, FigureAxes, Size
from roastcoffea.units import format_time


def _note_failed(ax: Axes, failed: int) -> None:
    """Say how many failed chunks were left out, if any."""
    if failed:
        caption(ax, f"{failed} failed chunk{'s' if failed > 1 else ''} left out")


@figure(figsize=(10, 6), title="Chunk Runtime Distribution")
def plot_runtime_distribution(
    chunk_metrics: ChunkRecords, figsize: Size, title: str, bins: int = 30
) -> FigureAxes:
    """Plot the histogram of chunk runtimes, with their mean and median.

    The runtime is each successful chunk's ``duration``, the wall time of its
    ``process()`` call; failed chunks (an ``error``) stop early and are left
    out, with a note. Unit: seconds on x, chunks on y.

    Reads ``duration`` (s) and ``error``.

    Raises
    ------
    ValueError
        If there are no chunk records or no successful chunk has a duration.
    """
    records = chunk_records(chunk_metrics)
    good = successful(records)
    durations = np.array([r["duration"] for r in good if has_number(r, "duration")], dtype=float)
    if not len(durations):
        raise ValueError(
            f"no successful chunk record with a 'duration' to plot "
            f"({len(records) - len(good)} of {len(records)} chunks failed)"
        )
    fig, ax = new_figure(figsize)
    draw_distribution(ax, durations, bins, "duration (s)", " s", "chunks", title, format_time)
    _note_failed(ax, len(records) - len(good))
    return fig, ax


@figure(figsize=(10, 6), title="Chunk Runtime vs Number of Events")
def plot_runtime_vs_events(chunk_metrics: ChunkRecords, figsize: Size, title: str) -> FigureAxes:
    """Plot each chunk's runtime against its number of events, with a linear fit.

    One point per successful chunk: ``num_events`` on x, ``duration`` (wall
    time of ``process()``) on y; failed chunks are left out, with a note. The
    least-squares line (slope in ms per event) is drawn when there are at least
    two distinct event counts; when every chunk has the same number of events,
    a note says so instead. Unit: events on x, seconds on y.

    Reads ``num_events``, ``duration`` (s) and ``error``.

    Raises
    ------
    ValueError
        If no successful chunk record has both ``num_events`` and ``duration``
        (or there are no chunk records at all).
    """
    records = chunk_records(chunk_metrics)
    good = successful(records)
    points = [
        (r["num_events"], r["duration"])
        for r in good
        if has_number(r, "num_events") and has_number(r, "duration")
    ]
    if not points:
        raise ValueError("no successful chunk record with 'num_events' and 'duration' to plot")
    events, durations = np.array(points, dtype=float).T
    fig, ax = new_figure(figsize)
    if len(points) == 1:
        ax.set_title(title)
        say_instead(ax, f"1 chunk: {events[0]:,.0f} events in {format_time(durations[0])}")
        _note_failed(ax, len(records) - len(good))
        return fig, ax
    ax.scatter(events, durations, color=COLORS[0], alpha=0.7, label="chunks")
    if len(np.unique(events)) == 1:
        caption(
            ax,
            f"every chunk has {events[0]:,.0f} events: no trend to fit; the spread of "
            "durations is the runtime distribution",
        )
    else:
        slope, intercept = np.polyfit(events, durations, 1)
        x = np.array([events.min(), events.max()])
        ax.plot(
            x,
            slope * x + intercept,
            color="red",
            linestyle="--",
            label=f"fit: {slope * 1e3:.3g} ms/event + {intercept:.3g} s",
        )
    label_axes(ax, "events per chunk", "duration (s)", title, grid="both")
    legend(ax)
    _note_failed(ax, len(records) - len(good))
    return fig, ax
