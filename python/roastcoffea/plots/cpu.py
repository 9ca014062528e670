"""Per-worker CPU, occupancy and executing tasks over time."""

from __future__ import annotations

from roastcoffea.plots._common import COLORS, figure
from roastcoffea.plots._series import band_figure, per_worker_plot, worker_series
from roastcoffea.plots._types import FigureAxes, Size, TrackingData

_CPU_YLABEL = "CPU (% of one core)"


@per_worker_plot(
    "worker_occupancy", "occupancy (s)", "Worker Occupancy Over Time", "``worker_occupancy`` (s)"
)
def plot_occupancy_timeline() -> None:
    """Plot each worker's occupancy, one line per worker.

    Occupancy is the scheduler's estimate of the seconds of work queued on the
    worker (``WorkerState.occupancy``). Unit: seconds, against UTC time.
    """


@per_worker_plot(
    "worker_executing",
    "executing (tasks)",
    "Executing Tasks Per Worker Over Time",
    "``worker_executing`` (tasks)",
)
def plot_executing_tasks_timeline() -> None:
    """Plot the number of tasks executing on each worker, one line per worker.

    The count is ``len(WorkerState.executing)`` at the worker's last heartbeat.
    Unit: tasks, against UTC time.
    """


@per_worker_plot(
    "worker_cpu", _CPU_YLABEL, "CPU Utilization Per Worker Over Time", "``worker_cpu`` (%)", True
)
def plot_cpu_utilization_per_worker_timeline() -> None:
    """Plot each worker process's CPU utilization, one line per worker.

    The value is the worker process's ``cpu_percent`` (psutil): 100 % is one
    core, and a worker with several threads can exceed it, so the y axis
    reaches at least 100 % and grows to the largest value instead of clipping.
    Unit: % of one core, against UTC time.
    """


@figure
def plot_cpu_utilization_mean_timeline(
    tracking_data: TrackingData, figsize: Size = (10, 4), title: str = "CPU Utilization Over Time"
) -> FigureAxes:
    """Plot the mean CPU utilization across workers, with its min-max band.

    At each sample instant: the mean of ``worker_cpu`` over the workers that
    reported (line) and their minimum to maximum (band). 100 % is one core; the
    y axis reaches at least 100 % and grows to show higher values. Unit: % of
    one core, against UTC time.

    Parameters
    ----------
    tracking_data : mapping
        ``metrics["tracking_data"]``; reads ``worker_cpu`` (%).

    Raises
    ------
    ValueError
        If ``worker_cpu`` is missing or has no reported value.
    """
    series = worker_series(tracking_data, "worker_cpu")
    return band_figure(series, COLORS[1], _CPU_YLABEL, title, figsize)
