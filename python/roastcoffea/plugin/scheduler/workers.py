"""Reading worker state on the scheduler: sample columns and full payloads."""

from __future__ import annotations

import asyncio
import math
from typing import Any

from roastcoffea._native import SERIES_COLUMNS
from roastcoffea.plugin.protocol import (
    NODE_METRIC,
    PLUGIN_NAME,
    UNMONITORED,
    WORKER_STATE_HANDLER,
)

#: Series columns, in the order of ``roast_column`` in native/include/roast/series.h.
COLUMNS: tuple[str, ...] = SERIES_COLUMNS


def _number(value: Any) -> float | None:
    """``value`` as a float, or None when it is missing or not a finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _nested(metrics: dict, outer: str, inner: str) -> float | None:
    """``metrics[outer][inner]`` as a number, None when any level is missing."""
    section = metrics.get(outer)
    return _number(section.get(inner)) if isinstance(section, dict) else None


def worker_values(ws: Any) -> tuple[float | None, ...]:
    """One sample of a ``WorkerState``, in :data:`COLUMNS` order.

    Parameters
    ----------
    ws : distributed.scheduler.WorkerState

    Returns
    -------
    tuple
        18 numbers; None where the worker has not reported the value (the
        aggregator stores NaN, shown as "not measured", never as 0).
    """
    metrics = ws.metrics if isinstance(ws.metrics, dict) else {}
    executing = getattr(ws, "executing", None)
    node = metrics.get(NODE_METRIC)
    node = node if isinstance(node, dict) else {}
    return (
        _number(metrics.get("memory")),
        _number(ws.memory_limit),
        _number(ws.nthreads),
        _number(len(ws.processing)),
        _number(len(executing)) if executing is not None else None,
        _number(ws.nbytes),
        _number(ws.occupancy),
        _number(metrics.get("cpu")),
        _nested(metrics, "spilled_bytes", "disk"),
        _nested(metrics, "host_net_io", "read_bps"),
        _nested(metrics, "host_net_io", "write_bps"),
        _nested(metrics, "host_disk_io", "read_bps"),
        _nested(metrics, "host_disk_io", "write_bps"),
        _number(node.get("cores")),
        _number(node.get("runnable")),
        _number(node.get("load")),
        _number(node.get("steal_percent")),
        _number(ws.last_seen),
    )


class Unmonitored(Exception):
    """A worker runs without roastcoffea (it could not import it); the message says why."""


def unmonitored_reason(ws: Any) -> str | None:
    """Why the worker runs unmonitored, when its last heartbeat says so."""
    metrics = ws.metrics if isinstance(ws.metrics, dict) else {}
    return _unmonitored(metrics.get(PLUGIN_NAME))


def _unmonitored(answer: Any) -> str | None:
    if isinstance(answer, dict) and isinstance(answer.get(UNMONITORED), str):
        return answer[UNMONITORED]
    return None


def worker_payload(ws: Any) -> bytes | None:
    """The worker plugin's payload of the last heartbeat, if the worker sent one."""
    metrics = ws.metrics if isinstance(ws.metrics, dict) else {}
    payload = metrics.get(PLUGIN_NAME)
    return payload if isinstance(payload, bytes) else None


async def fetch_full_state(scheduler: Any, address: str, timeout: float) -> bytes:
    """Ask one worker for its full payload through its RPC handler.

    Parameters
    ----------
    scheduler : distributed.Scheduler
    address : str
        The worker's address.
    timeout : float
        Seconds to wait for the answer.

    Returns
    -------
    bytes
        The payload, ready for ``Aggregator.ingest``.

    Raises
    ------
    TimeoutError
        When the worker does not answer in time.
    Unmonitored
        When the worker could not load roastcoffea (it says why).
    RuntimeError
        When the worker has no roastcoffea worker plugin (it answers None).
    """
    call = getattr(scheduler.rpc(address), WORKER_STATE_HANDLER)
    reply = await asyncio.wait_for(call(), timeout)
    reason = _unmonitored(reply)
    if reason is not None:
        raise Unmonitored(reason)
    if not isinstance(reply, bytes):
        raise RuntimeError(
            f"worker {address} answered {type(reply).__name__} to {WORKER_STATE_HANDLER}; "
            "is the roastcoffea worker plugin installed there?"
        )
    return reply
