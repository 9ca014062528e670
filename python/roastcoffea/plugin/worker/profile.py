"""A worker's own profile of some task prefixes over a window, the current cycle included.

Dask's workers sample their executing threads (``distributed.worker.profile``)
and keep the samples per task prefix in cycles (``profile_keys_history``, one
entry per ``cycle``, stamped with its end on the scheduler clock; the current
cycle in ``profile_keys``). ``Worker.get_profile(key=, start=, stop=)`` returns
nothing when no cycle ended inside the window, so a block shorter than a cycle
would have no samples: :func:`window_profile` reads the cycles itself.
"""

from __future__ import annotations

from typing import Any

from distributed import profile

from roastcoffea._gc import paused as paused_gc
from roastcoffea.metrics.hot_lines import with_leaves

#: A worker keeps the frames holding at least this share of a prefix's samples.
FLOOR = 0.005


def window_profile(start: float, stop: float, dask_worker: Any = None) -> dict[str, dict[str, Any]]:
    """``{prefix: profile tree}`` of the cycles overlapping ``[start, stop]`` (scheduler clock).

    Every prefix with samples in the window. Runs on the worker's event loop
    (``Client.run``), where the profiler also runs, so the trees are read whole.
    Each prefix's tree is merged over the cycles (a copy), its innermost frames
    given their samples and the frames under :data:`FLOOR` of its samples left out
    (:func:`~roastcoffea.metrics.hot_lines.with_leaves`): the reply stays
    small at any run length. The cyclic garbage collector is paused meanwhile: the
    trees are short-lived and acyclic, and a collection they triggered would scan
    the worker's whole heap.
    """
    with paused_gc():
        return _window_profile(start, stop, dask_worker)


def _window_profile(start: float, stop: float, dask_worker: Any) -> dict[str, dict[str, Any]]:
    cycles = []
    began = float("-inf")  # a cycle covers (the previous cycle's end, its own end]
    for ended, by_prefix in list(dask_worker.profile_keys_history):
        if ended >= start and began <= stop:
            cycles.append(by_prefix)
        began = ended
    if began <= stop:
        cycles.append(dask_worker.profile_keys)
    trees: dict[str, list[dict[str, Any]]] = {}
    for by_prefix in cycles:
        for prefix, tree in by_prefix.items():
            trees.setdefault(prefix, []).append(tree)
    return {
        prefix: with_leaves(merged, FLOOR * merged["count"])
        for prefix, found in trees.items()
        if (merged := profile.merge(*found))["count"]
    }
