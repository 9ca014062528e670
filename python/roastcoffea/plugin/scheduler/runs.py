"""A run's tasks in the run's own span, whatever task group Dask gave them.

Dask files a task under the span of its task group, and a group takes the span
of the first task it sees ("force everything onto the span of the earliest
encountered TaskGroup", ``distributed/spans.py``). Two collectors running the same
processor class share its groups (and coffea's ``automatic_retries`` and
``reduce``), so the second run's tasks land in the first run's span.

The collector therefore annotates every task of its block with its own span id
(:data:`RUN_ANNOTATION`), and makes that span exist on the scheduler before its
first task (:func:`roastcoffea.plugin.client.run.run_span`). When the scheduler sees a
new task whose group's span lies outside its run's span, :class:`RunPlacement`

* files the task's transitions under the run's span (the ``runs`` dict that the
  aggregator's transition hook reads before the group);
* marks the task with :data:`PLACED_ANNOTATION`, on which the worker plugin
  makes the worker execute it in the run's span (``TaskState.span_id``), so
  Dask's own fine performance metrics of the task, the phases and the chunk
  records all go to the run, and Dask's span totals agree with ours.

Only a span the scheduler knows is ever marked: a worker's heartbeat naming a
span the scheduler lacks would close the worker.
"""

from __future__ import annotations

from typing import Any

from roastcoffea.plugin.dask_versions import spans_extension
from roastcoffea.plugin.protocol import PLACED_ANNOTATION, RUN_ANNOTATION


class RunPlacement:
    """Places new tasks of a run that Dask grouped under another span.

    Parameters
    ----------
    scheduler : distributed.Scheduler
    count_error : callable
        Counts a failure by name (the aggregator's error table).
    """

    def __init__(self, scheduler: Any, count_error: Any) -> None:
        self.scheduler = scheduler
        self.count_error = count_error
        #: {key: run span id} of the placed tasks; the transition hook reads it
        #: and drops a task's entry when the task is forgotten.
        self.runs: dict[Any, str] = {}

    def place(self, annotations: dict[str, dict[Any, Any]]) -> int:
        """Place the new tasks of ``annotations`` (``update_graph``'s); returns how many.

        A task belongs to its group's span when its run is that span or one of its
        ancestors (the span annotation Dask gives the task lists them); decided
        once per group and run.
        """
        runs = annotations.get(RUN_ANNOTATION)
        if not runs:
            return 0
        tasks = self.scheduler.tasks
        spans = getattr(spans_extension(self.scheduler), "spans", {})
        verdicts: dict[tuple[int, str], bool] = {}
        placed = 0
        for key, run in runs.items():
            ts = tasks.get(key)
            if ts is None or not isinstance(run, str):
                continue
            verdict = verdicts.get((id(ts.group), run))
            if verdict is None:
                verdict = verdicts[(id(ts.group), run)] = _elsewhere(ts, run)
            if not verdict:
                continue
            if run not in spans:
                self.count_error("runs:span-unknown")
                continue
            ts.annotations[PLACED_ANNOTATION] = run
            self.runs[key] = run
            placed += 1
        return placed


def _elsewhere(ts: Any, run: str) -> bool:
    """Whether Dask filed ``ts`` under a span outside its run's subtree."""
    span = (ts.annotations or {}).get("span")
    ids = span.get("ids", ()) if isinstance(span, dict) else ()
    return run not in ids
