"""Worker memory as a percentage of the worker's memory limit, over time."""

from __future__ import annotations

from roastcoffea.plots._common import COLORS
from roastcoffea.plots._series import band_plot, memory_percent, per_worker_plot

_YLABEL = "memory (% of limit)"
#: What both memory figures read, and when they refuse.
_READS = (
    "``worker_memory`` and ``worker_memory_limit`` (bytes; samples with a limit of 0 are left out)"
)
_REFUSED = "either series is missing or no sample has both a memory and a limit"


@band_plot(memory_percent, COLORS[0], _YLABEL, "Memory Utilization Over Time", _READS, _REFUSED)
def plot_memory_utilization_mean_timeline() -> None:
    """Plot the mean memory utilization across workers, with its min-max band.

    At each sample instant, each worker's ``worker_memory / worker_memory_limit``
    in percent; the line is the mean over the workers that reported, the band
    their minimum to maximum. Unit: % of the memory limit, against seconds since the block's start.
    The y axis reaches at least 100 % and grows to show higher values.
    """


@per_worker_plot(
    memory_percent, _YLABEL, "Memory Utilization Per Worker Over Time", _READS, True, _REFUSED
)
def plot_memory_utilization_per_worker_timeline() -> None:
    """Plot each worker's memory utilization, one line per worker.

    Each line is ``worker_memory / worker_memory_limit`` in percent at the
    worker's samples. Unit: % of the memory limit, against seconds since the block's start.
    """
