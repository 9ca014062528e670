"""A worker's own profile of some task prefixes over a window, the current cycle included.

Dask's workers sample their executing threads (``distributed.worker.profile``)
and keep the samples per task prefix in cycles (``profile_keys_history``, one
entry per ``cycle``, stamped with its end on the scheduler clock; the current
cycle in ``profile_keys``). ``Worker.get_profile(key=, start=, stop=)`` returns
nothing when no cycle ended inside the window, so a block shorter than a cycle
would have no samples: :func:`window_profile` reads the cycles itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from distributed import profile


def window_profile(
    prefixes: Iterable[str], start: float, stop: float, dask_worker: Any = None
) -> dict[str, dict[str, Any]]:
    """``{prefix: profile tree}`` of the cycles overlapping ``[start, stop]`` (scheduler clock).

    Runs on the worker's event loop (``Client.run``), where the profiler also runs,
    so the trees are read whole; they are copied (``profile.merge``) before the reply.
    """
    history = list(dask_worker.profile_keys_history)
    trees: dict[str, list[dict[str, Any]]] = {prefix: [] for prefix in prefixes}
    began = float("-inf")  # a cycle covers (the previous cycle's end, its own end]
    for ended, by_prefix in history:
        if ended >= start and began <= stop:
            for prefix, found in trees.items():
                if prefix in by_prefix:
                    found.append(by_prefix[prefix])
        began = ended
    if began <= stop:
        for prefix, found in trees.items():
            if prefix in dask_worker.profile_keys:
                found.append(dask_worker.profile_keys[prefix])
    return {prefix: profile.merge(*found) for prefix, found in trees.items() if found}
