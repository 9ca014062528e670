"""Which worker tasks run coffea work items: the processor's tasks, whatever coffea named them.

A task is searched once per class, (prefix, span, type of its first argument): coffea's
preprocessing and processing tasks share the prefix "automatic_retries" when not
compressed, but not that type (``FileMeta`` vs a ``WorkItem`` or a tuple holding one).
The first processor task of each (prefix, span) is announced with a ``kind="prefix"``
record (:mod:`roastcoffea.records`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

try:  # the task spec classes of dask >= 2024.12; older dask has tuple tasks
    from dask._task_spec import DataNode, Task
except ImportError:  # pragma: no cover - depends on the installed dask
    DataNode = Task = None  # type: ignore[assignment,misc]

#: Task classes and (prefix, span) pairs remembered as classified / announced;
#: when either is full it is cleared (counted as ``announced_resets``), so a
#: pair may be announced again.
MAX_ANNOUNCED = 65536
#: Arguments looked at per nesting level when searching a task for a work item.
SCAN_WIDTH = 8
#: Nesting levels searched below the task itself.
SCAN_DEPTH = 3
#: Attributes that make an object a coffea ``WorkItem`` (duck-typed).
WORK_ITEM_FIELDS = ("dataset", "filename", "treename", "entrystart", "entrystop", "fileuuid")


#: {type: whether its instances are work items}; types are few, but bounded anyway.
_WORK_ITEM_TYPES: dict[type, bool] = {}
MAX_WORK_ITEM_TYPES = 4096


def is_work_item(obj: Any) -> bool:
    """Whether ``obj`` looks like a coffea ``WorkItem`` (has all its fields).

    Decided once per type, on its first instance: the check runs for every
    argument of every task that starts on the worker.
    """
    kind = type(obj)
    known = _WORK_ITEM_TYPES.get(kind)
    if known is None:
        known = all(hasattr(obj, name) for name in WORK_ITEM_FIELDS)
        if len(_WORK_ITEM_TYPES) >= MAX_WORK_ITEM_TYPES:
            _WORK_ITEM_TYPES.clear()
        _WORK_ITEM_TYPES[kind] = known
    return known


def holds_work_item(obj: Any, depth: int = SCAN_DEPTH) -> bool:
    """Whether a task spec (or an argument of one) carries a coffea ``WorkItem``.

    Looks into ``Task`` arguments and keyword values, ``DataNode`` values and
    plain tuples and lists, at most :data:`SCAN_WIDTH` items per level and
    ``depth`` levels down, so the cost is bounded whatever the task holds.

    Parameters
    ----------
    obj : Any
        A worker task's ``run_spec``, or one of its arguments.
    depth : int
        Levels still allowed below ``obj``.

    Returns
    -------
    bool
    """
    if is_work_item(obj):
        return True
    if depth <= 0:
        return False
    if isinstance(obj, (tuple, list)):
        items = obj[:SCAN_WIDTH]
    elif DataNode is not None and isinstance(obj, DataNode):
        return holds_work_item(obj.value, depth - 1)
    elif Task is not None and isinstance(obj, Task):
        items = obj.args[:SCAN_WIDTH]
        if obj.kwargs:
            items = items + tuple(obj.kwargs.values())[:SCAN_WIDTH]
    else:
        return False
    return any(holds_work_item(item, depth - 1) for item in items)


class ProcessorTasks:
    """Finds the tasks that run coffea work items, and the first of each (prefix, span).

    Event loop only. ``count`` counts ``announced_resets``.
    """

    def __init__(self, count: Callable[[str], None]) -> None:
        self._count = count
        self._classified: dict[tuple[str, str | None, type | None], bool] = {}
        self._announced: set[tuple[str, str | None]] = set()

    def first_of_its_prefix(self, ts: Any) -> bool:
        """Whether ``ts`` runs a work item and is the first such task of its (prefix, span).

        A task of a known class costs one dict lookup.
        """
        spec = ts.run_spec
        args = getattr(spec, "args", None)
        shape = (ts.prefix, ts.span_id, type(args[0]) if args else None)
        if shape in self._classified:
            return False
        if len(self._classified) >= MAX_ANNOUNCED:
            self._classified.clear()
            self._count("announced_resets")
        found = holds_work_item(spec)
        self._classified[shape] = found
        marker = (ts.prefix, ts.span_id)
        if not found or marker in self._announced:
            return False
        if len(self._announced) >= MAX_ANNOUNCED:
            self._announced.clear()
            self._count("announced_resets")
        self._announced.add(marker)
        return True

    def clear(self) -> None:
        self._classified.clear()
        self._announced.clear()
