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


#: A dataset's chunks are fitted with a line from this many distinct event counts: two
#: sizes (the full chunks and a file's last, shorter one) give a line through two means.
FIT_SIZES = 3


@figure(figsize=(10, 6), title="Chunk Runtime vs Number of Events")
def plot_runtime_vs_events(chunk_metrics: ChunkRecords, figsize: Size, title: str) -> FigureAxes:
    """Plot each chunk's runtime against its number of events, with a linear fit per dataset.

    One point per successful chunk, coloured by its dataset: ``num_events`` on x,
    ``duration`` (wall time of ``process()``) on y; failed chunks are left out, with a
    note. Each dataset with chunks of at least :data:`FIT_SIZES` distinct event counts
    gets its own least-squares line (slope in ms per event): datasets differ in what
    an event costs, so a line through all of them would fit none. A note names the
    datasets whose chunks are too alike in size to fit. Unit: events on x, seconds on y.

    Reads ``num_events``, ``duration`` (s), ``dataset`` and ``error``.

    Raises
    ------
    ValueError
        If no successful chunk record has both ``num_events`` and ``duration``
        (or there are no chunk records at all).
    """
    records = chunk_records(chunk_metrics)
    good = successful(records)
    points = [
        (r.get("dataset"), float(r["num_events"]), float(r["duration"]))
        for r in good
        if has_number(r, "num_events") and has_number(r, "duration")
    ]
    if not points:
        raise ValueError("no successful chunk record with 'num_events' and 'duration' to plot")
    fig, ax = new_figure(figsize)
    if len(points) == 1:
        _, events, duration = points[0]
        ax.set_title(title)
        say_instead(ax, f"1 chunk: {events:,.0f} events in {format_time(duration)}")
        _note_failed(ax, len(records) - len(good))
        return fig, ax
    unfitted = []
    for i, dataset in enumerate(sorted({d for d, _, _ in points}, key=str)):
        named = "" if dataset is None else f"{dataset}: "
        sizes, seconds = (
            np.array([p[k] for p in points if p[0] == dataset], dtype=float) for k in (1, 2)
        )
        color = COLORS[i % len(COLORS)]
        ax.scatter(sizes, seconds, color=color, alpha=0.7, label=f"{named}chunks")
        if len(np.unique(sizes)) < FIT_SIZES:
            unfitted.append("the chunks" if dataset is None else str(dataset))
            continue
        slope, intercept = np.polyfit(sizes, seconds, 1)
        x = np.array([sizes.min(), sizes.max()])
        ax.plot(
            x,
            slope * x + intercept,
            color=color,
            linestyle="--",
            label=f"{named}{slope * 1e3:.3g} ms/event + {intercept:.3g} s",
        )
    if unfitted:
        caption(
            ax,
            f"no fit for {', '.join(unfitted)}: chunks of fewer than {FIT_SIZES} distinct "
            "event counts; their spread of durations is the runtime distribution",
        )
    label_axes(ax, "events per chunk", "duration (s)", title, grid="both")
    legend(ax)
    _note_failed(ax, len(records) - len(good))
    return fig, ax
