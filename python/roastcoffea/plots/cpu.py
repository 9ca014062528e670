"""Per-worker CPU, occupancy and executing tasks over time."""

from __future__ import annotations

from roastcoffea.plots._common import COLORS
from roastcoffea.plots._series import band_plot, per_worker_plot

_CPU_YLABEL = "CPU (% of one core)"


@per_worker_plot(
    "worker_occupancy", "occupancy (s)", "Worker Occupancy Over Time", "``worker_occupancy`` (s)"
)
def plot_occupancy_timeline() -> None:
    """Plot each worker's occupancy, one line per worker.

    Occupancy is the scheduler's estimate of the seconds of work queued on the
    worker (``WorkerState.occupancy``). Unit: seconds, against seconds since the block's start.
    """


@per_worker_plot(
    "worker_executing",
    "executing (tasks)",
    "Executing Tasks Per Worker Over Time",
    "``worker_executing`` (tasks)",
    whole=True,
)
def plot_executing_tasks_timeline() -> None:
    """Plot the number of tasks executing on each worker, one line per worker.

    The count is ``len(WorkerState.executing)`` at the worker's last heartbeat.
    Unit: tasks, against seconds since the block's start.
    """


@per_worker_plot(
    "worker_cpu", _CPU_YLABEL, "CPU Utilization Per Worker Over Time", "``worker_cpu`` (%)", True
)
def plot_cpu_utilization_per_worker_timeline() -> None:
    """Plot each worker process's CPU utilization, one line per worker.

    The value is the worker process's ``cpu_percent`` (psutil): 100 % is one
    core, and a worker with several threads can exceed it, so the y axis
    reaches at least 100 % and grows to the largest value instead of clipping.
    Unit: % of one core, against seconds since the block's start.
    """


@band_plot("worker_cpu", COLORS[1], _CPU_YLABEL, "CPU Utilization Over Time", "``worker_cpu`` (%)")
def plot_cpu_utilization_mean_timeline() -> None:
    """Plot the mean CPU utilization across workers, with its min-max band.

    At each sample instant: the mean of ``worker_cpu`` over the workers that
    reported (line) and their minimum to maximum (band). 100 % is one core; the
    y axis reaches at least 100 % and grows to show higher values. Unit: % of
    one core, against seconds since the block's start.
    """
