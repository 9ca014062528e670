"""Where the wall time went: the processor tasks on their threads, the run's stages shaded."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import PolyCollection
from matplotlib.patches import Patch

from roastcoffea.metrics.wall_split import SOURCES
from roastcoffea.plots._common import COLORS, count_axis, figure, label_axes, legend, new_figure
from roastcoffea.plots._types import FigureAxes, Size

#: Stage shading, lightest for the steady state.
STAGE_COLORS = {"startup": "#c7c7c7", "steady": "#ffffff", "tail": "#f7b6b6", "finish": "#c7c7c7"}
STAGE_NAMES = {"startup": "start-up, finish", "tail": "tail"}
TASK_COLOR, TAIL_COLOR = COLORS[0], COLORS[3]
#: Most tasks drawn with an edge each.
EDGED_TASKS = 200


def task_intervals(metrics: Mapping[str, Any]) -> list[tuple[float, float, str, Any]]:
    """``(start, stop, worker, thread)`` of each processor task, as the wall split read them
    (``thread`` None from chunk records)."""
    source = metrics.get("wall_split_source")
    records = "raw_phase_records" if source == "phase records" else "raw_chunk_metrics"
    rows = metrics.get(records) or []
    fields = SOURCES.get(str(source), SOURCES["chunk records"])
    return sorted(
        (r[fields[0]], r[fields[1]], str(r.get("worker")), r.get("thread"))
        for r in rows
        if isinstance(r.get(fields[0]), float) and isinstance(r.get(fields[1]), float)
    )


def lanes(
    intervals: list[tuple[float, float, str, Any]], threads: Mapping[str, int] | None = None
) -> tuple[list[int], int]:
    """A row per interval (its worker's thread, workers one after another), and the rows.

    Without the thread, the first of the worker's rows free at the interval's start.
    With ``threads`` (``{worker: threads}``), every worker keeps a row per thread, those
    that ran no processor task included.
    """
    rows: dict[str, dict[Any, int]] = {}
    ends: dict[str, list[float]] = {}
    placed = []
    for start, stop, worker, thread in intervals:
        if thread is not None:
            lane = rows.setdefault(worker, {}).setdefault(thread, len(rows[worker]))
        else:
            free = ends.setdefault(worker, [])
            lane = next((i for i, end in enumerate(free) if end <= start), len(free))
            free[lane : lane + 1] = [stop]
        placed.append((worker, lane))
    widths = {str(w): int(n) for w, n in (threads or {}).items()}
    for worker, lane in placed:
        widths[worker] = max(widths.get(worker, 0), lane + 1)
    offsets, base = {}, 0
    for worker in sorted(widths):
        offsets[worker] = base
        base += widths[worker]
    return [offsets[w] + lane for w, lane in placed], base


def worker_threads(metrics: Mapping[str, Any]) -> dict[str, int]:
    """``{worker: its largest thread count}`` from ``tracking_data["worker_cores"]``."""
    cores = (metrics.get("tracking_data") or {}).get("worker_cores") or {}
    threads = {}
    for worker, points in cores.items():
        values = [v for _, v in points if isinstance(v, (int, float)) and v == v]
        if values:
            threads[str(worker)] = int(max(values))
    return threads


def _draw_tasks(
    ax: Axes,
    intervals: list[tuple[float, float, str, Any]],
    rows: list[int],
    origin: float,
    tail_start: float,
) -> None:
    """The tasks as boxes 0.7 high on their rows, one collection per colour: a patch per
    task would take minutes to draw for 10^5 tasks."""
    starts = np.array([i[0] for i in intervals], dtype=float) - origin
    stops = np.array([i[1] for i in intervals], dtype=float) - origin
    lanes = np.array(rows, dtype=float)
    tail = stops > tail_start - origin
    # A white edge parts neighbouring tasks; past a few hundred it would paint over them.
    edge = 0.5 if len(intervals) <= EDGED_TASKS else 0.0
    for color, chosen in ((TASK_COLOR, ~tail), (TAIL_COLOR, tail)):
        x0, x1 = starts[chosen], stops[chosen]
        y0, y1 = lanes[chosen] - 0.35, lanes[chosen] + 0.35
        boxes = np.stack([np.column_stack(c) for c in ((x0, y0), (x0, y1), (x1, y1), (x1, y0))], 1)
        drawn = PolyCollection(list(boxes), facecolors=color, edgecolors="white", linewidths=edge)
        drawn.set_zorder(2)
        ax.add_collection(drawn)


@figure(figsize=(12, 5), title="Where the Wall Time Went", needs="wall_split")
def plot_wall_split(metrics: dict[str, Any], figsize: Size, title: str) -> FigureAxes:
    """The processor tasks as bars on their worker's threads, over the collector's block.

    The block's stages are shaded (start-up, steady, tail, finish); the tasks
    that ran in the tail are red; every worker thread has its row, idle ones too.
    Time is in seconds since the block's start. Reads ``wall_split``,
    ``wall_split_source``, the records it names and ``tracking_data``'s
    ``worker_cores``.
    """
    split = metrics["wall_split"]
    origin = split["startup"]["start"]
    intervals = task_intervals(metrics)
    rows, count = lanes(intervals, worker_threads(metrics))
    tail_start = split["tail"]["start"]
    fig, ax = new_figure(figsize)
    for stage, color in STAGE_COLORS.items():
        begin, end = split[stage]["start"] - origin, split[stage]["end"] - origin
        if end > begin:
            ax.axvspan(begin, end, color=color, alpha=0.6, lw=0, zorder=0)
    _draw_tasks(ax, intervals, rows, origin, tail_start)
    label_axes(ax, "seconds since the block's start", "thread (by worker)", title, grid="x")
    count_axis(ax)
    ax.set_ylim(count - 0.5, -0.5)
    ax.set_xlim(0, split["finish"]["end"] - origin)
    handles = [
        Patch(color=TASK_COLOR, label="processor task"),
        Patch(color=TAIL_COLOR, label="ran in the tail"),
        *(
            Patch(color=STAGE_COLORS[s], alpha=0.6, label=STAGE_NAMES[s])
            for s in ("startup", "tail")
        ),
    ]
    legend(ax, handles=handles)
    return fig, ax
