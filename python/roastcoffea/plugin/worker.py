"""RoastWorkerPlugin: the worker half, installed by :class:`RoastPlugin`.

It adds two things to the worker, both public and version-stable Dask
mechanisms (never a worker extension or a batched-stream op: those close the
worker when the scheduler does not know them):

* ``worker.metrics["roastcoffea"]``, a callable Dask runs at every heartbeat,
  whose bytes reach the scheduler as ``ws.metrics["roastcoffea"]``;
* ``worker.handlers["roastcoffea_worker_state"]``, an RPC handler that answers
  with the full cumulative state (used by flushes and after missed payloads).
"""

from __future__ import annotations

import logging
import math
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from roastcoffea import _native
from roastcoffea.plugin._workers import PLUGIN_NAME, WORKER_STATE_HANDLER

logger = logging.getLogger(__name__)


def auto_window(sampler_interval: float, heartbeat_ms: float) -> int:
    """Payloads of history each payload must cover so the sampler misses none.

    The sampler reads ``ws.metrics`` once per ``sampler_interval``; meanwhile
    ``ceil(sampler_interval / heartbeat_interval)`` heartbeats may replace it.
    Two more absorb jitter of either clock.

    Parameters
    ----------
    sampler_interval : float
        Seconds between the scheduler sampler's ticks.
    heartbeat_ms : float
        The worker's heartbeat period in milliseconds.

    Returns
    -------
    int
    """
    if not heartbeat_ms > 0:
        return 4
    return math.ceil(sampler_interval * 1000.0 / heartbeat_ms) + 2


class RoastWorkerPlugin(WorkerPlugin):
    """Sends the worker's fine performance metrics and queued records.

    Parameters
    ----------
    interval : float
        The scheduler sampler's interval in seconds (sizes the window).
    window : int, optional
        Fixed number of payloads each payload covers; by default it follows the
        heartbeat period (:func:`auto_window`).
    """

    name = PLUGIN_NAME
    idempotent = True

    def __init__(self, interval: float = 1.0, window: int | None = None) -> None:
        self.interval = float(interval)
        self.window = window
        self._tracker: Any = None
        self._worker: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {"interval": self.interval, "window": self.window}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)

    def setup(self, worker: Any) -> None:
        """Install the heartbeat metric and the state handler on ``worker``."""
        self._worker = worker
        self._tracker = _native.DigestTracker(worker.id, self.window or 4)
        worker.metrics[PLUGIN_NAME] = self._payload
        worker.handlers[WORKER_STATE_HANDLER] = self._full_state

    def teardown(self, worker: Any) -> None:
        """Remove what :meth:`setup` installed."""
        if worker.metrics.get(PLUGIN_NAME) == self._payload:
            del worker.metrics[PLUGIN_NAME]
        if worker.handlers.get(WORKER_STATE_HANDLER) == self._full_state:
            del worker.handlers[WORKER_STATE_HANDLER]
        self._tracker = None
        self._worker = None

    def queue_record(self, data: bytes) -> bool:
        """Queue an opaque instrumentation record for the scheduler.

        The record rides the next heartbeat payload (and any full-state
        answer); the scheduler keeps each record exactly once.

        Parameters
        ----------
        data : bytes
            The record, opaque to the plugin.

        Returns
        -------
        bool
            False when the queue is at its byte cap and the record was refused
            (the tracker counts it).

        Raises
        ------
        TypeError
            If ``data`` is not bytes.
        RuntimeError
            If the plugin is not set up on a worker.
        """
        if not isinstance(data, bytes):
            raise TypeError(f"queue_record takes bytes, not {type(data).__name__}")
        if self._tracker is None:
            raise RuntimeError("RoastWorkerPlugin is not set up on a worker")
        return bool(self._tracker.queue_record(data))

    def _payload(self, worker: Any) -> bytes:
        """The heartbeat metric: digest changes of the last ``window`` payloads."""
        if self.window is None:
            heartbeat = worker.periodic_callbacks.get("heartbeat")
            if heartbeat is not None:
                self._tracker.window = auto_window(self.interval, heartbeat.callback_time)
        return self._tracker.payload(worker.digests_total)

    def _full_state(self) -> bytes:
        """RPC handler ``roastcoffea_worker_state``: every digest and queued record."""
        return self._tracker.full_payload(self._worker.digests_total)
