"""Which task the calling thread runs, as the plugin tells the instrumentation.

The instrumentation knows no Dask. The plugin hands it the lookup, as it hands
the phase clock its sink: the worker half when it sets up on a worker, the
client half when a run opens in this process. Without one, a chunk belongs to
no task and no span.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple


class RunningTask(NamedTuple):
    """Where a chunk record goes: the worker plugin of the task, or nowhere."""

    worker: str | None  #: the worker's address, None outside a worker
    plugin: Any  #: the RoastWorkerPlugin to hand records to, or None
    key: Any  #: the task key, None outside a task
    span: str | None  #: the task's span id, or the caller's innermost span


NO_TASK = RunningTask(None, None, None, None)

_lookup: Callable[[], RunningTask] | None = None


def set_lookup(lookup: Callable[[], RunningTask]) -> None:
    """Make ``lookup`` the way to the calling thread's task (the last one set wins:
    the plugin's lookups are one function, stateless)."""
    global _lookup
    _lookup = lookup


def running_task() -> RunningTask:
    """The calling thread's task, or :data:`NO_TASK` when no plugin set a lookup."""
    return NO_TASK if _lookup is None else _lookup()
