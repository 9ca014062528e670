"""A run's wall time split from Dask's own task stream, for a worker with one thread.

Start-up and finish are bounded as in :mod:`roastcoffea.metrics.wall_split`, by the first
task's start and the last one's end, but the tasks are read from the scheduler's
``TaskStreamPlugin``, so that a bare run (no roastcoffea on its cluster) is split by the same
rule as a monitored one. On one thread the parts tile the run's wall exactly:

* enter, exit: ``MetricsCollector.__enter__`` and ``__exit__`` (none in a bare run);
* start-up: to the first task's ``compute`` start (coffea's preprocessing tasks included in
  the tasks, so this is submission and dispatch of the first);
* compute, per task prefix: the tasks' ``compute`` intervals as the workers recorded them;
* between tasks: the thread idle from the first task's start to the last one's end: the
  worker's event loop finishing one task and starting the next, and waiting for the
  scheduler to send it;
* finish: from the last task's end to the run's end (gathering the output).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

#: The parts in the order they tile a run's wall.
PARTS = ("enter", "startup", "compute", "between", "finish", "exit")


def stream_index(dask_scheduler: Any) -> int:
    """The task stream's cursor (registers Dask's ``TaskStreamPlugin`` the first time)."""
    return dask_scheduler.get_task_stream_index()


def stream_since(dask_scheduler: Any, index: int) -> list[tuple[str, list[tuple[float, float]]]]:
    """Each task finished since ``index``: its prefix and its ``compute`` intervals."""
    from dask.utils import key_split

    return [
        (
            key_split(record["key"]),
            [(s["start"], s["stop"]) for s in record["startstops"] if s["action"] == "compute"],
        )
        for record in dask_scheduler.get_task_stream(start_index=index)
    ]


def wall_parts(
    tasks: list[tuple[str, list[tuple[float, float]]]],
    started: float,
    entered: float,
    leaving: float,
    ended: float,
    processors: frozenset[str] = frozenset(),
) -> dict[str, float]:
    """The parts of :data:`PARTS` in seconds, ``compute:<prefix>`` for each prefix
    (``compute:processor`` for the prefixes in ``processors``) and their sum, ``wall``.

    ``started`` and ``ended`` bound the run, ``entered`` and ``leaving`` the block inside
    the collector (equal to them in a bare run); all on the wall clock the workers use.
    """
    intervals = [
        (a, b, "processor" if prefix in processors else prefix)
        for prefix, spans in tasks
        for a, b in spans
    ]
    if not intervals:
        raise ValueError("no task ran in the run")
    by_prefix: dict[str, float] = defaultdict(float)
    for a, b, prefix in intervals:
        by_prefix[prefix] += b - a
    first, last = min(a for a, _, _ in intervals), max(b for _, b, _ in intervals)
    compute = sum(by_prefix.values())
    parts = {
        "enter": entered - started,
        "startup": first - entered,
        "compute": compute,
        "between": last - first - compute,
        "finish": leaving - last,
        "exit": ended - leaving,
        "wall": ended - started,
    }
    parts.update({f"compute:{p}": s for p, s in by_prefix.items()})
    return parts
