"""Number of live workers over time."""

from __future__ import annotations

from matplotlib.ticker import MaxNLocator

from roastcoffea.plots._common import (
    COLORS,
    figure,
    new_figure,
    require_key,
    time_axis,
    to_datetime,
)
from roastcoffea.plots._types import FigureAxes, Size, TrackingData


@figure
def plot_worker_count_timeline(
    tracking_data: TrackingData, figsize: Size = (10, 4), title: str = "Worker Count Over Time"
) -> FigureAxes:
    """Plot the number of live workers at each sample instant.

    Draws ``tracking_data["worker_counts"]`` in time order as a step line with
    markers: the count holds until the next sample. Unit: workers, against UTC
    time.

    Parameters
    ----------
    tracking_data : mapping
        ``metrics["tracking_data"]``; reads ``worker_counts`` (``{datetime: int}``).

    Raises
    ------
    ValueError
        If ``tracking_data`` is None or has no ``worker_counts``.
    """
    counts = require_key(tracking_data, "worker_counts", "tracking_data")
    points = sorted((to_datetime(t), n) for t, n in counts.items())
    fig, ax = new_figure(figsize)
    ax.plot(
        [t for t, _ in points],
        [n for _, n in points],
        drawstyle="steps-post",
        marker="o",
        markersize=3,
        color=COLORS[0],
        label="workers",
    )
    time_axis(ax, "workers", title)
    ax.set_ylim(bottom=0, top=max(n for _, n in points) * 1.1 + 0.5)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    return fig, ax
