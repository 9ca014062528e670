"""Worker memory as a percentage of the worker's memory limit, over time."""

from __future__ import annotations

from roastcoffea.plots._common import COLORS, figure
from roastcoffea.plots._series import band_figure, memory_percent, per_worker_plot
from roastcoffea.plots._types import FigureAxes, Size, TrackingData

_YLABEL = "memory (% of limit)"
#: What both memory figures read, and when they refuse.
_READS = (
    "``worker_memory`` and ``worker_memory_limit`` (bytes; samples with a limit of 0 are left out)"
)
_REFUSED = "either series is missing or no sample has both a memory and a limit"


@figure
def plot_memory_utilization_mean_timeline(
    tracking_data: TrackingData,
    figsize: Size = (10, 4),
    title: str = "Memory Utilization Over Time",
) -> FigureAxes:
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


@per_worker_plot(
    memory_percent, _YLABEL, "Memory Utilization Per Worker Over Time", _READS, True, _REFUSED
)
def plot_memory_utilization_per_worker_timeline() -> None:
    """Plot each worker's memory utilization, one line per worker.

    Each line is ``worker_memory / worker_memory_limit`` in percent at the
    worker's samples. Unit: % of the memory limit, against UTC time.
    """
