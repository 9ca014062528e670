"""Which workers left a collector's window, how, and the cluster's shape at its end.

Pure functions of the plugin's answers: the departures the scheduler logged
(``roastcoffea.plugin.scheduler.departures``), the snapshot's worker table and series,
and the workers that ran without roastcoffea (not importable, or its setup failed). No Dask.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple


class Departures(NamedTuple):
    """The workers of a window that left it or ran unmonitored (docs/metrics.md)."""

    lost: list[dict[str, Any]]
    retired: list[dict[str, Any]]
    restarted: list[dict[str, Any]]
    unmonitored: list[dict[str, str]]


def sort_departures(
    departures: list[dict[str, Any]],
    workers: dict[str, dict[str, Any]],
    window: tuple[float, float],
    unmonitored: dict[str, str],
) -> Departures:
    """Sort the departures and unmonitored workers of a window.

    Parameters
    ----------
    departures : list of dict
        The flush's ``departures`` (``{address, removed, kind, restarted_as, ...}``).
    workers : dict
        The snapshot's ``workers`` table (``added``, ``removed``).
    window : (float, float)
        The collector's window, scheduler clock.
    unmonitored : dict
        ``{address: reason}`` of the workers that could not load roastcoffea.

    Returns
    -------
    Departures
        The lost workers (and their ``added`` time), the retired ones, the lost ones
        that came back, and the unmonitored workers present in the window.
    """
    t_from, t_to = window
    left = [
        {**d, "added": (workers.get(d["address"]) or {}).get("added")}
        for d in departures
        if d["removed"] <= t_to
    ]
    lost = [d for d in left if d["kind"] == "lost"]
    present = {
        address
        for address, info in workers.items()
        if info["added"] <= t_to and (info["removed"] is None or info["removed"] >= t_from)
    }
    return Departures(
        lost=lost,
        retired=[d for d in left if d["kind"] == "retired"],
        restarted=[d for d in lost if d["restarted_as"] is not None],
        unmonitored=[
            {"address": address, "reason": reason}
            for address, reason in sorted(unmonitored.items())
            if address in present
        ],
    )


def cluster_shape(snapshot: dict[str, Any] | None, lost_workers: int) -> dict[str, Any]:
    """Workers, threads and memory limits of the cluster at the end of a snapshot.

    The workers still present and their last sampled ``nthreads`` and ``memory_limit``
    (a measurement's metadata ``cluster``).
    """
    if snapshot is None:
        return {"workers": None, "threads": None, "memory_limit_bytes": None}
    live = [a for a, w in snapshot["workers"].items() if w["removed"] is None]
    threads = memory = 0.0
    for address in live:
        columns = snapshot["series"].get(address, {}).get("columns", {})
        threads += _last(columns.get("nthreads", {}).get("max", []))
        memory += _last(columns.get("memory_limit", {}).get("max", []))
    return {
        "workers": len(live),
        "workers_seen": len(snapshot["workers"]),
        "lost_workers": lost_workers,
        "threads": int(threads) if threads else None,
        "memory_limit_bytes": int(memory) if memory else None,
    }


def _last(values: list[float]) -> float:
    """The last value that is not NaN, or 0."""
    for value in reversed(values):
        if not math.isnan(value):
            return value
    return 0.0
