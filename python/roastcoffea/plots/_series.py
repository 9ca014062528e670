"""Worker time series as the legacy plots draw them (private to the plot modules).

``tracking_data`` holds, per series, ``{worker: [(datetime, value | None), ...]}``.
The helpers here turn that into arrays, drop the values a worker did not report
(None or NaN), and reduce across workers per sample instant. The sampler samples
every worker at the same instants, so grouping by timestamp is exact and costs
one sort (``np.unique``), never a pairwise match of timestamps.
"""

from __future__ import annotations

import datetime as dt
import inspect
import math
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from numbers import Real
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.ticker import MaxNLocator

from roastcoffea.plots import _common as common
from roastcoffea.plots._types import FigureAxes, Size, TrackingData

#: ``{worker: (sample datetimes, values)}``, workers in address order.
WorkerSeries = dict[str, tuple[list[dt.datetime], np.ndarray]]


def _reported(points: Any) -> tuple[list[dt.datetime], np.ndarray]:
    """The points of one worker whose value was reported (not None, finite)."""
    kept = [
        (common.to_datetime(t), float(v))
        for t, v in points
        if v is not None and math.isfinite(float(v))
    ]
    return [t for t, _ in kept], np.array([v for _, v in kept], dtype=float)


def instants(series: WorkerSeries) -> list[dt.datetime]:
    """Every sample time of every worker of ``series``."""
    return [t for times, _ in series.values() for t in times]


def worker_series(tracking_data: Mapping[str, Any] | None, key: str) -> WorkerSeries:
    """``tracking_data[key]`` per worker, unreported values dropped.

    Raises ValueError naming ``key`` when the series is absent or no worker
    reported a single value.
    """
    series = common.require_key(tracking_data, key, "tracking_data")
    out: WorkerSeries = {}
    for worker in sorted(series, key=str):
        times, values = _reported(series[worker])
        if len(times):
            out[str(worker)] = (times, values)
    if not out:
        raise ValueError(f"tracking_data[{key!r}] has no reported value to plot")
    return out


def memory_percent(tracking_data: Mapping[str, Any] | None) -> WorkerSeries:
    """Per worker, memory as a percentage of its memory limit at each sample.

    Memory and limit are paired by sample time. A sample whose limit is 0
    (Dask's "no limit") or unreported has no percentage and is left out.
    """
    memory = worker_series(tracking_data, "worker_memory")
    limits = worker_series(tracking_data, "worker_memory_limit")
    out: WorkerSeries = {}
    for worker, (times, values) in memory.items():
        limit_times, limit_values = limits.get(worker, ([], np.empty(0)))
        limit_at = dict(zip(limit_times, limit_values, strict=True))
        kept = [
            (t, 100.0 * v / limit_at[t])
            for t, v in zip(times, values, strict=True)
            if limit_at.get(t, 0) > 0
        ]
        if kept:
            out[worker] = ([t for t, _ in kept], np.array([p for _, p in kept]))
    if not out:
        raise ValueError(
            "tracking_data has no sample with both 'worker_memory' and a positive "
            "'worker_memory_limit' (workers without a memory limit have no utilization)"
        )
    return out


@dataclass(frozen=True)
class InstantStats:
    """Reductions across workers at each sample instant, in time order."""

    times: list[dt.datetime]
    total: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray


def across_workers(series: WorkerSeries) -> InstantStats:
    """Sum, mean, min and max over the workers that reported at each instant."""
    all_times = [t for times, _ in series.values() for t in times]
    stamps = np.array([t.timestamp() for t in all_times])
    values = np.concatenate([values for _, values in series.values()])
    instants, first, slot = np.unique(stamps, return_index=True, return_inverse=True)
    total = np.zeros(len(instants))
    count = np.zeros(len(instants))
    low = np.full(len(instants), np.inf)
    high = np.full(len(instants), -np.inf)
    np.add.at(total, slot, values)
    np.add.at(count, slot, 1)
    np.minimum.at(low, slot, values)
    np.maximum.at(high, slot, values)
    return InstantStats([all_times[i] for i in first], total, total / count, low, high)


#: Line styles and markers cycled over workers, so that workers on the same values stay visible.
LINESTYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "D", "v")
#: Width of the first worker's line and of the last: each line drawn is thinner than the one
#: under it, so lines that coincide show as nested strokes, not as one line.
WIDEST, NARROWEST = 4.0, 1.2
#: Markers on a line: about this many, spread over its samples.
MARKS_PER_LINE = 12


def draw_per_worker(
    ax: Axes,
    series: WorkerSeries,
    max_legend_entries: int,
    ylabel: str,
    title: str,
    clock: common.Clock,
    whole: bool = False,
) -> None:
    """One line per worker (labelled with its address), over seconds since ``clock``'s origin.

    Workers get their own color, line style and marker, and each line is
    drawn thinner than the one before it: workers with the same values draw
    as nested strokes (a thick solid line around a thinner dashed one), never
    as one line. A legend beside the axes when there are at most
    ``max_legend_entries`` workers, else a note with the number of workers.
    ``whole``: integer y ticks (counts).
    """
    widths = np.linspace(WIDEST, NARROWEST, len(series)) if len(series) > 1 else [1.6]
    for i, (worker, (times, values)) in enumerate(series.items()):
        ax.plot(
            clock(times),
            values,
            linestyle=LINESTYLES[i % len(LINESTYLES)],
            marker=MARKERS[i % len(MARKERS)],
            markersize=3 + widths[i],
            markevery=max(1, len(times) // MARKS_PER_LINE),
            linewidth=widths[i],
            color=common.COLORS[i % len(common.COLORS)],
            label=worker,
        )
    common.time_axis(ax, ylabel, title, clock, whole)
    if len(series) <= max_legend_entries:
        common.legend(ax, title="worker")
    else:
        note_workers(ax, len(series))


#: When a figure of one worker series refuses to draw.
SERIES_MISSING = "the series is missing or has no reported value"


def _reader(series: str | Callable[[TrackingData], WorkerSeries]) -> Callable[..., WorkerSeries]:
    """``series`` itself when it is a function, else the reader of that key of tracking_data."""
    return series if callable(series) else partial(worker_series, key=series)


def per_worker_plot(
    series: str | Callable[[TrackingData], WorkerSeries],
    ylabel: str,
    title: str,
    reads: str,
    percent: bool = False,
    refused: str = SERIES_MISSING,
    whole: bool = False,
) -> Callable[[Callable[[], None]], Callable[..., FigureAxes]]:
    """Decorate a docstring-only function into a figure of one line per worker.

    ``series`` is the key of ``tracking_data`` drawn, or a function giving the
    series. The figure function keeps the decorated one's name and summary
    (its docstring) and has the parameters ``(tracking_data, output_path=None,
    figsize=(12, 6), title=title, max_legend_entries=5, origin=None)``; its docstring says
    it ``reads`` that and raises ValueError when ``refused``. The y axis starts
    at 0 and, for a ``percent`` series, reaches at least 100 %; a ``whole``
    series (a count) has integer ticks.
    """
    read = _reader(series)

    def decorate(described: Callable[[], None]) -> Callable[..., FigureAxes]:
        def draw(
            tracking_data: TrackingData,
            figsize: Size = (12, 6),
            title: str = title,
            max_legend_entries: int = 5,
            *,
            origin: float | None = None,
        ) -> FigureAxes:
            drawn = read(tracking_data)
            fig, ax = common.new_figure(figsize)
            if peak_of(drawn) == 0 and not percent:
                ax.set_title(title)
                common.say_instead(ax, all_zero(drawn))
                return fig, ax
            clock = common.Clock.of(origin, instants(drawn))
            draw_per_worker(ax, drawn, max_legend_entries, ylabel, title, clock, whole)
            if percent:
                percent_ylim(ax, peak_of(drawn))
            else:
                ax.set_ylim(0, 1.1 * peak_of(drawn) or 1.0)
            return fig, ax

        return _described_figure(draw, described, reads, refused)

    return decorate


def band_plot(
    series: str | Callable[[TrackingData], WorkerSeries],
    color: str,
    ylabel: str,
    title: str,
    reads: str,
    refused: str = SERIES_MISSING,
) -> Callable[[Callable[[], None]], Callable[..., FigureAxes]]:
    """Decorate a docstring-only function into a figure of the mean across workers.

    As :func:`per_worker_plot`, for the mean of the series over the workers
    that reported at each sample instant (line) with their minimum to maximum
    (band); parameters ``(tracking_data, output_path=None, figsize=(10, 4),
    title=title, origin=None)``; the y axis from 0 to at least 100 %.
    """
    read = _reader(series)

    def decorate(described: Callable[[], None]) -> Callable[..., FigureAxes]:
        def draw(
            tracking_data: TrackingData,
            figsize: Size = (10, 4),
            title: str = title,
            *,
            origin: float | None = None,
        ) -> FigureAxes:
            stats = across_workers(read(tracking_data))
            fig, ax = common.new_figure(figsize)
            clock = common.Clock.of(origin, stats.times)
            draw_band(ax, stats, color, "mean", clock)
            common.time_axis(ax, ylabel, title, clock)
            percent_ylim(ax, float(stats.high.max()))
            common.legend(ax)
            return fig, ax

        return _described_figure(draw, described, reads, refused)

    return decorate


def _described_figure(
    draw: Callable[..., FigureAxes], described: Callable[[], None], reads: str, refused: str
) -> Callable[..., FigureAxes]:
    """``draw`` as the figure function ``described`` documents (name, module, summary)."""
    draw.__name__ = draw.__qualname__ = described.__name__
    draw.__module__ = described.__module__
    reads_doc = textwrap.fill(f"Reads {reads}.", 76)
    draw.__doc__ = (
        f"{inspect.cleandoc(described.__doc__ or '')}\n\n{reads_doc}\n\n"
        f"Raises\n------\nValueError\n    If {refused}.\n"
    )
    return common.figure()(draw)


def note_workers(ax: Axes, count: int) -> None:
    """Say under the axes how many workers the lines are (too many for a legend)."""
    common.caption(ax, f"{count} workers, one line each")


def draw_band(ax: Axes, stats: InstantStats, color: str, label: str, clock: common.Clock) -> None:
    """The mean across workers as a line, with the min-max range as a band."""
    times = clock(stats.times)
    ax.fill_between(times, stats.low, stats.high, color=color, alpha=0.25, label="min-max")
    ax.plot(times, stats.mean, color=color, linewidth=1.8, label=label)


#: Below this peak (%), a percentage axis ends near the data instead of at 100 %.
ZOOM_BELOW_PERCENT = 50.0


def percent_ylim(ax: Axes, peak: float) -> None:
    """0 to 100 % (raised above 100 % rather than clipping), or near the data when it stays low.

    A series that never reaches half of 100 % would draw as a flat line at the
    bottom: its axis ends 20 % above its peak, and a caption says so.
    """
    if 0 < peak < ZOOM_BELOW_PERCENT:
        ax.set_ylim(0, 1.2 * peak)
        common.caption(ax, f"the axis ends at {1.2 * peak:.3g}%: the peak is {peak:.3g}%")
    else:
        ax.set_ylim(0, max(100.0, 1.05 * peak))


def all_zero(series: WorkerSeries) -> str:
    """The words for a series whose every sample is 0."""
    samples = sum(len(values) for _, values in series.values())
    return f"{len(series)} worker(s), {samples} samples, every one 0: nothing to draw"


def peak_of(series: WorkerSeries) -> float:
    """The largest value of any worker."""
    return max(float(values.max()) for _, values in series.values())


def chunk_records(chunk_metrics: Any) -> list[Mapping[str, Any]]:
    """The chunk records (``metrics["raw_chunk_metrics"]``), or ValueError when there are none."""
    common.require(chunk_metrics, "chunk records (metrics['raw_chunk_metrics'])")
    if isinstance(chunk_metrics, Mapping):
        raise ValueError(
            "chunk_metrics must be the list of chunk records "
            "(metrics['raw_chunk_metrics']), not a mapping"
        )
    return list(chunk_metrics)


def successful(records: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The records of chunks that did not fail (no ``error``)."""
    return [r for r in records if not r.get("error")]


def has_number(record: Mapping[str, Any], field: str) -> bool:
    """Whether ``record[field]`` is a finite number (not None, not NaN)."""
    value = record.get(field)
    return isinstance(value, Real) and math.isfinite(value)


def histogram_bins(count: int, most: int) -> int:
    """Bins for ``count`` values: the Rice rule (2 n^(1/3)), at most ``most``.

    16 chunks get 6 bins, not 30 bins of which 24 are empty.
    """
    return max(1, min(most, math.ceil(2 * count ** (1 / 3))))


def draw_distribution(
    ax: Axes,
    values: np.ndarray,
    bins: int,
    xlabel: str,
    unit: str,
    counted: str,
    title: str,
    write: Callable[[float], str] | None = None,
) -> bool:
    """Histogram of ``values`` with their mean (red) and median (green) as lines.

    ``counted`` names what the values are of (``"chunks"``, the y axis);
    ``unit`` follows each value in text (``" s"``), or ``write`` writes a
    value whole (a duration). Values that are one value, or spread over under
    1 % of their size, would draw one microscopic bar: they are said in words
    instead, and False is returned.
    """
    ax.set_title(title)
    if common.degenerate(values):
        ends = (float(values.min()), float(values.max()))
        if write is None:
            # Four figures at least: the ends of a narrow range, not their rounding.
            low, high = (f"{v}{unit}" for v in common.distinct_values(*ends, least=4))
        else:
            low, high = (write(v) for v in ends)
        what = f"{len(values)} {counted}" if len(values) > 1 else f"1 {counted.rstrip('s')}"
        if len(values) == 1:
            text = f"{what}: {low}"
        elif low == high:
            text = f"{what}, all at {low}"
        else:
            text = f"{what}, all between {low} and {high}: no distribution to draw"
        common.say_instead(ax, text)
        return False
    ax.hist(
        values,
        bins=histogram_bins(len(values), bins),
        color=common.COLORS[0],
        alpha=0.7,
        edgecolor="black",
        label=counted,
    )
    mean, median = float(np.mean(values)), float(np.median(values))
    mean_text, median_text = common.distinct_values(mean, median)
    ax.axvline(mean, color="red", linestyle="--", linewidth=2, label=f"mean {mean_text}{unit}")
    ax.axvline(
        median, color="green", linestyle=":", linewidth=2, label=f"median {median_text}{unit}"
    )
    common.label_axes(ax, xlabel, counted, title, grid="y")
    common.count_axis(ax)
    common.legend(ax)
    return True


def in_start_order(records: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """``records`` sorted by ``t_start`` (records without one last, in their order)."""
    return sorted(records, key=lambda r: (not has_number(r, "t_start"), r.get("t_start") or 0))


def draw_worker_counts(
    ax: Axes, counts: Mapping[Any, int], clock: common.Clock, **style: Any
) -> None:
    """The worker count as a step line in time order (the count holds until the next sample).

    The y axis starts at 0, leaves room above the peak and has integer ticks.
    """
    points = sorted((common.epoch(t), n) for t, n in counts.items())
    times = clock([t for t, _ in points])
    ax.plot(times, [n for _, n in points], drawstyle="steps-post", label="workers", **style)
    ax.set_ylim(bottom=0, top=max(n for _, n in points) * 1.1 + 0.5)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
