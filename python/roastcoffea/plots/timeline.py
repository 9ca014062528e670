"""When each task prefix ran: a Gantt chart of the span's prefixes."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from matplotlib.patches import Patch

from roastcoffea.plots._common import (
    COLORS,
    Clock,
    caption,
    figure,
    legend,
    new_figure,
    require_key,
    time_axis,
)
from roastcoffea.plots._types import FigureAxes, Size

#: Bar colors: processor prefixes stand out from the rest.
PROCESSOR_COLOR = COLORS[1]
OTHER_COLOR = COLORS[0]


def timed_prefixes(
    per_prefix: Mapping[str, Mapping[str, Any]],
) -> list[tuple[str, Mapping[str, Any]]]:
    """Prefixes with a finite first_start and last_stop, earliest first."""
    timed = []
    for prefix, row in per_prefix.items():
        start, stop = row.get("first_start"), row.get("last_stop")
        if start is None or stop is None or not (math.isfinite(start) and math.isfinite(stop)):
            continue
        timed.append((str(prefix), row))
    return sorted(timed, key=lambda item: (item[1]["first_start"], item[0]))


def _count_label(row: Mapping[str, Any]) -> str:
    tasks = row.get("tasks") or 0
    label = f"{tasks} task{'' if tasks == 1 else 's'}"
    erred = row.get("erred") or 0
    return f"{label}, {erred} erred" if erred else label


@figure(figsize=(12, 6), title="Task Prefix Timeline")
def plot_prefix_timeline(metrics: dict[str, Any], figsize: Size, title: str) -> FigureAxes:
    """Gantt chart: one horizontal bar per task prefix, from its first start to its last stop.

    The x axis is seconds since the block's start (``time_origin``; without it, since
    the first prefix's start); prefixes are ordered by first
    start, top to bottom. Processor prefixes are drawn in orange, the others in
    blue; each bar is annotated with the prefix's finished (and erred) task
    count. Prefixes without a finished task (no start/stop) are left out and
    counted in a note.

    Reads ``per_prefix`` (``first_start``, ``last_stop`` in epoch seconds, ``tasks``,
    ``erred``, ``processor``) and ``time_origin``.

    Returns
    -------
    tuple
        ``(fig, ax)``; bar ``i`` of ``ax.patches`` spans the ``i``-th prefix
        (x in seconds since the origin).

    Raises
    ------
    ValueError
        When ``per_prefix`` is missing or empty, or no prefix has a start and stop.
    """
    per_prefix = require_key(metrics, "per_prefix", "metrics")
    timed = timed_prefixes(per_prefix)
    if not timed:
        raise ValueError("metrics['per_prefix'] has no prefix with first_start and last_stop")
    clock = Clock.of(metrics.get("time_origin"), [row["first_start"] for _, row in timed])
    fig, ax = new_figure(figsize)
    for y, (prefix, row) in enumerate(timed):
        (left,) = clock([row["first_start"]])
        width = row["last_stop"] - row["first_start"]
        color = PROCESSOR_COLOR if row.get("processor") else OTHER_COLOR
        # The edge keeps a prefix that ran for microseconds visible.
        ax.barh(y, width, left=left, height=0.6, color=color, edgecolor=color, label=prefix)
        ax.annotate(
            _count_label(row),
            (left + width, y),
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
            fontsize=9,
        )
    ax.set_yticks(range(len(timed)), [prefix for prefix, _ in timed])
    ax.invert_yaxis()
    time_axis(ax, "task prefix", title, clock)
    # Bars stick to their left edge by default; room on both sides for the annotations.
    ax.use_sticky_edges = False
    ax.margins(x=0.08)
    legend(
        ax,
        handles=[
            Patch(color=PROCESSOR_COLOR, label="processor"),
            Patch(color=OTHER_COLOR, label="other"),
        ],
    )
    untimed = len(per_prefix) - len(timed)
    if untimed:
        caption(ax, f"{untimed} prefix(es) without a finished task not shown")
    return fig, ax
