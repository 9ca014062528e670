"""Number of live workers over time."""

from __future__ import annotations

from roastcoffea.plots._common import COLORS, Clock, figure, new_figure, require_key, time_axis
from roastcoffea.plots._series import draw_worker_counts
from roastcoffea.plots._types import FigureAxes, Size, TrackingData


@figure(figsize=(10, 4), title="Worker Count Over Time")
def plot_worker_count_timeline(
    tracking_data: TrackingData, figsize: Size, title: str, *, origin: float | None = None
) -> FigureAxes:
    """Plot the number of live workers at each sample instant.

    Draws ``tracking_data["worker_counts"]`` in time order as a step line with
    markers: the count holds until the next sample. Unit: workers, against
    seconds since the block's start.

    Reads ``worker_counts`` (``{datetime: int}``).

    Raises
    ------
    ValueError
        If ``tracking_data`` is None or has no ``worker_counts``.
    """
    counts = require_key(tracking_data, "worker_counts", "tracking_data")
    fig, ax = new_figure(figsize)
    clock = Clock.of(origin, counts)
    draw_worker_counts(ax, counts, clock, marker="o", markersize=3, color=COLORS[0])
    time_axis(ax, "workers", title, clock, whole=True)
    return fig, ax
