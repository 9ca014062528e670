"""Where the processor's time off CPU went: waiting for a CPU, or blocked.

A phase's time off CPU is its wall less its CPU. The phase clock splits it with the
thread's run-queue delay (Linux's ``/proc/thread-self/schedstat``: the time the thread
was runnable and waiting for a CPU), read at each task's start and end and after the
waits that took the thread off CPU (``native/include/roast/phases.h``):

- **waiting for a CPU** (``cpu-wait-seconds`` of each ``phase:<name>``): more runnable
  threads than cores, the worker's own threads or other processes on the node;
- **blocked**: the rest, where the thread could not run: a read from storage or the
  network, a lock, a sleep, a page fault. What is still not told apart is time spent
  waiting for Python's GIL while runnable (it shows as CPU wait or blocked, as the
  kernel saw the thread: spinning or sleeping on the lock).

Each figure sums the tasks' digests over workers, like every phase figure; a task's
delay is exact, its split over phases exact when one phase was off CPU between two
readings, and within ``cpu_wait_split_bound_seconds`` otherwise.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import roastcoffea.phase_vocabulary as vocab
from roastcoffea.metrics._util import Metrics
from roastcoffea.metrics.phases import execute_rows

if TYPE_CHECKING:
    from roastcoffea.metrics import MetricsInputs

KEYS = (
    "phase_cpu_wait_seconds",
    "phase_blocked_seconds",
    "cpu_wait_seconds",
    "blocked_seconds",
    "cpu_wait_percent",
    "blocked_percent",
    "cpu_wait_split_bound_seconds",
    "cpu_wait_per_worker",
    "cpu_wait_tasks",
)

Rows = dict[tuple[str, str, str], float]  # (worker, activity, unit) -> value


def compute(inputs: MetricsInputs, out: Metrics) -> None:
    """Put the off-CPU split of the measured tasks' phases, or why it is missing."""
    rows = execute_rows(inputs)
    tasks = _total(rows, vocab.TASKS_ACTIVITY, vocab.COUNT)
    measured = _total(rows, vocab.CPU_WAIT_TASKS_ACTIVITY, vocab.COUNT)
    if not tasks or not measured:
        reason = (
            "no task measured by the phase clock"
            if not tasks
            else "the workers' kernel keeps no run-queue delay (/proc/thread-self/schedstat, "
            "Linux with CONFIG_SCHED_INFO): time off CPU is not split into its causes"
        )
        for key in KEYS:
            out.missing(key, reason)
        return
    phases = [p for p in vocab.PHASES if _has(rows, p)]
    off = {p: max(_sum(rows, p, vocab.WALL) - _sum(rows, p, vocab.CPU), 0.0) for p in phases}
    wait, moved = _within_off({p: _sum(rows, p, vocab.CPU_WAIT) for p in phases}, off)
    blocked = {p: max(off[p] - wait[p], 0.0) for p in phases}
    total = math.fsum(_sum(rows, p, vocab.WALL) for p in phases)
    out.put("cpu_wait_tasks", int(measured))
    out.put("phase_cpu_wait_seconds", wait)
    out.put("phase_blocked_seconds", blocked)
    out.put("cpu_wait_seconds", math.fsum(wait.values()))
    out.put("blocked_seconds", math.fsum(blocked.values()))
    out.put("cpu_wait_percent", _percent(math.fsum(wait.values()), total))
    out.put("blocked_percent", _percent(math.fsum(blocked.values()), total))
    bound = _total(rows, vocab.CLOCK_ACTIVITY, vocab.CPU_WAIT) + moved
    out.put("cpu_wait_split_bound_seconds", bound)
    per_worker: dict[str, float] = {}
    for (worker, activity, unit), value in rows.items():
        if unit == vocab.CPU_WAIT and activity in vocab.PHASE_OF_ACTIVITY:
            per_worker[worker] = per_worker.get(worker, 0.0) + value
    out.put("cpu_wait_per_worker", dict(sorted(per_worker.items())))


def _within_off(wait: dict[str, float], off: dict[str, float]) -> tuple[dict[str, float], float]:
    """Each phase's wait cut to its time off CPU, the excess given to the phases with time
    off CPU to spare, in proportion to it; the total kept. Returns the waits and the excess.

    The clock splits each delay by its estimate of the phases' time off CPU, which the
    phases' CPU split may not quite match; the excess moved widens the split's bound.
    """
    fitted = {p: min(w, off[p]) for p, w in wait.items()}
    excess = math.fsum(wait.values()) - math.fsum(fitted.values())
    spare = {p: off[p] - fitted[p] for p in fitted}
    room = math.fsum(spare.values())
    if excess <= 0.0:
        return fitted, 0.0
    given = min(excess, room)
    left = excess - given  # beyond every phase's time off CPU (the reads' moments apart)
    total = math.fsum(wait.values())
    for phase in fitted:
        fitted[phase] += (spare[phase] * given / room if given > 0.0 else 0.0) + (
            left * wait[phase] / total
        )
    return fitted, excess


def _sum(rows: Rows, phase: str, unit: str) -> float:
    return _total(rows, vocab.PHASE_ACTIVITY.format(phase), unit)


def _has(rows: Rows, phase: str) -> bool:
    activity = vocab.PHASE_ACTIVITY.format(phase)
    return any(a == activity and u == vocab.WALL for _, a, u in rows)


def _total(rows: Rows, activity: str, unit: str) -> float:
    return math.fsum(v for (_, a, u), v in rows.items() if a == activity and u == unit)


def _percent(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole > 0 else 0.0
