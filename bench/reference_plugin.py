"""A pure-Python SchedulerPlugin doing the transition bookkeeping of roastcoffea's C hook.

This is the yardstick of bench/scheduler_hook.py: what the transition hook would cost if it
were written in Python, as a modest aggregator would be. Per call it derives the task
prefix with `dask.utils.key_split` (LRU-cached, like the C key_split), counts transitions
per prefix, and on processing->memory adds the task to a row keyed by (worker, span,
prefix): task count, compute and transfer seconds summed from `startstops`, output bytes,
first start and last stop. On ->erred it counts the error for the worker. The span id is
read the way the C hook reads it: `ts.group.span_id`, the group found in the scheduler's
`task_groups` by its name when the key gives it directly (a tuple key's first element, a
plain str key's prefix), else through `tasks[key]`.

It aggregates inline instead of queueing records, so it has no drain step: its per-call
cost is the whole cost. Like the C hook it never raises into Dask; failures are counted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from dask.utils import key_split
from distributed.diagnostics.plugin import SchedulerPlugin

HEX32 = re.compile(r"[a-f0-9]{32}")


def group_is_prefix(key: str) -> bool:
    """Whether distributed's key_split_group gives this str key its prefix."""
    return bool(key) and key[0] not in "(<" and not (len(key) == 32 and HEX32.match(key))


class TaskStats:
    """The statistics of one (worker, span, prefix) row."""

    __slots__ = (
        "compute_seconds",
        "erred",
        "first_start",
        "last_stop",
        "output_bytes",
        "tasks",
        "transfer_seconds",
    )

    def __init__(self) -> None:
        self.tasks = 0
        self.erred = 0
        self.compute_seconds = 0.0
        self.transfer_seconds = 0.0
        self.output_bytes = 0
        self.first_start = float("inf")
        self.last_stop = float("-inf")


class ReferencePlugin(SchedulerPlugin):
    """Per-prefix, per-worker, per-span task statistics, aggregated in Python."""

    name = "roastcoffea-bench-reference"
    idempotent = True

    def __init__(
        self,
        tasks: Mapping[Any, Any] | None = None,
        task_groups: Mapping[Any, Any] | None = None,
    ) -> None:
        self.tasks: Mapping[Any, Any] = tasks if tasks is not None else {}
        self.task_groups: Mapping[Any, Any] = task_groups if task_groups is not None else {}
        self.transitions: dict[str, int] = {}
        self.rows: dict[tuple[str | None, str | None, str], TaskStats] = {}
        self.calls = 0
        self.errors = 0

    async def start(self, scheduler: Any) -> None:
        self.tasks = scheduler.tasks
        self.task_groups = scheduler.task_groups

    def transition(self, key, start, finish, *args, stimulus_id=None, **kwargs):
        try:
            self.calls += 1
            prefix = key_split(key)
            self.transitions[prefix] = self.transitions.get(prefix, 0) + 1
            if finish == "memory" and start == "processing":
                self._finished(key, prefix, kwargs)
            elif finish == "erred":
                self._row(key, prefix, kwargs.get("worker")).erred += 1
        except Exception:
            self.errors += 1

    def _span(self, key, prefix: str) -> str | None:
        name = None
        if type(key) is tuple and key:
            name = key[0]
        elif type(key) is str and group_is_prefix(key):
            name = prefix
        group = self.task_groups.get(name) if name is not None else None
        if group is None:
            ts = self.tasks.get(key)
            group = ts.group if ts is not None else None
        return group.span_id if group is not None else None

    def _row(self, key, prefix: str, worker: str | None) -> TaskStats:
        span = self._span(key, prefix)
        row = self.rows.get((worker, span, prefix))
        if row is None:
            row = self.rows[(worker, span, prefix)] = TaskStats()
        return row

    def _finished(self, key, prefix: str, kwargs: dict) -> None:
        row = self._row(key, prefix, kwargs.get("worker"))
        row.tasks += 1
        row.output_bytes += kwargs.get("nbytes") or 0
        for ss in kwargs.get("startstops") or ():
            begin, end = ss["start"], ss["stop"]
            if ss["action"] == "compute":
                row.compute_seconds += end - begin
                row.first_start = min(row.first_start, begin)
                row.last_stop = max(row.last_stop, end)
            elif ss["action"] == "transfer":
                row.transfer_seconds += end - begin

    def totals(self) -> dict[str, float]:
        """Sums over all rows, to compare with the C aggregator's snapshot."""
        rows = self.rows.values()
        return {
            "tasks": sum(r.tasks for r in rows),
            "erred": sum(r.erred for r in rows),
            "compute_seconds": sum(r.compute_seconds for r in rows),
            "transfer_seconds": sum(r.transfer_seconds for r in rows),
            "output_bytes": sum(r.output_bytes for r in rows),
        }
