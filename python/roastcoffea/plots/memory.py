"""Worker memory as a percentage of the worker's memory limit, over time."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from roastcoffea.plots._common import COLORS, figure
from roastcoffea.plots._series import band_figure, memory_percent, per_worker_plot

_YLABEL = "memory (% of limit)"


@figure
def plot_memory_utilization_mean_timeline(
    tracking_data: Mapping[str, Any] | None,
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

    Raises
    ------
    ValueError
        If either series is missing or no sample has both a memory and a limit.
    """
    return band_figure(memory_percent(tracking_data), COLORS[0], _YLABEL, title, figsize)


plot_memory_utilization_per_worker_timeline = per_worker_plot(
    "plot_memory_utilization_per_worker_timeline",
    __name__,
    """Plot each worker's memory utilization, one line per worker.

    Each line is ``worker_memory / worker_memory_limit`` in percent at the
    worker's samples. Unit: % of the memory limit, against UTC time.

    Parameters
    ----------
    tracking_data : mapping
        ``metrics["tracking_data"]``; reads ``worker_memory`` and
        ``worker_memory_limit`` (bytes; samples with a limit of 0 are left out).

    Raises
    ------
    ValueError
        If either series is missing or no sample has both a memory and a limit.
    """,
    memory_percent,
    _YLABEL,
    "Memory Utilization Per Worker Over Time",
    percent=True,
)
