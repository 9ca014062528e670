"""The scheduler-side sampler: one tick per interval on the scheduler's event loop.

A tick drains the transition ring, samples every ``WorkerState`` into the
series, applies each worker's newest heartbeat payload, tells the aggregator
about new spans and, when a client listens, publishes a live delta.
"""

from __future__ import annotations

import asyncio
import logging
from time import thread_time
from typing import Any

from distributed.metrics import time
from tornado.ioloop import PeriodicCallback

from roastcoffea.plugin.scheduler.collectors import Collectors
from roastcoffea.plugin.scheduler.departures import Departures
from roastcoffea.plugin.scheduler.live import LiveStream
from roastcoffea.plugin.scheduler.spans import SpanTree
from roastcoffea.plugin.scheduler.totals import RunningTotals
from roastcoffea.plugin.scheduler.workers import (
    Unmonitored,
    fetch_full_state,
    unmonitored_reason,
    worker_payload,
    worker_values,
)

logger = logging.getLogger(__name__)


class Sampler:
    """Periodic sampling of worker state and payloads into an aggregator.

    Parameters
    ----------
    scheduler : distributed.Scheduler
    aggregator : roastcoffea._native.Aggregator
    totals : RunningTotals
        The chunks' running totals, whose deltas the live stream publishes.
    interval : float
        Seconds between ticks.
    live : bool
        Publish live deltas to subscribed clients.
    fetch_timeout : float
        Seconds to wait for a worker's full state after a payload gap.
    """

    def __init__(
        self,
        scheduler: Any,
        aggregator: Any,
        totals: RunningTotals,
        interval: float,
        *,
        live: bool,
        fetch_timeout: float = 10.0,
    ) -> None:
        self.scheduler = scheduler
        self.aggregator = aggregator
        self.interval = interval
        self.spans = SpanTree(scheduler, aggregator)
        self.collectors = Collectors(scheduler, aggregator, self.spans)
        self.live = LiveStream(scheduler, aggregator, totals) if live else None
        self.fetch_timeout = fetch_timeout
        # Worker states seen, kept past their removal from scheduler.workers so
        # remove_worker can still read the last heartbeat (it runs after del).
        self._states: dict[str, Any] = {}
        # Identity of the last payload applied per worker: ws.metrics is a new
        # dict at every heartbeat, so a new bytes object means a new payload.
        self._applied: dict[str, bytes] = {}
        self._fetching: set[str] = set()
        #: {address: why} of the workers that run without roastcoffea; kept after
        #: they leave, so a collector's exit still names them.
        self.unmonitored: dict[str, str] = {}
        self.departures = Departures()
        self._tasks: set[asyncio.Task] = set()
        self._callback = PeriodicCallback(self._guarded_tick, interval * 1000)
        #: Thread CPU seconds the ticks took (the sampler's own cost on the scheduler).
        self.cpu_seconds = 0.0

    def start(self) -> None:
        """Start ticking (call from the scheduler's event loop)."""
        self._callback.start()

    def stop(self) -> None:
        """Stop ticking and cancel outstanding full-state fetches."""
        self._callback.stop()
        for task in list(self._tasks):
            task.cancel()

    @property
    def running(self) -> bool:
        """Whether the periodic callback is active."""
        return self._callback.is_running()

    def tick(self) -> None:
        """One sampling pass over the ring, the workers, the spans, the records kept
        for no collector, and the stream."""
        start = thread_time()
        now = time()
        self.aggregator.drain()
        for address, ws in list(self.scheduler.workers.items()):
            self.watch(address, ws, now)
            self.sample(address, ws, now)
        self.spans.sync()
        self.collectors.tidy(now)
        if self.live is not None:
            self.live.tick(now)
        self.cpu_seconds += thread_time() - start

    def watch(self, address: str, ws: Any, now: float) -> None:
        """Record a worker (new or renamed) and keep its state for later."""
        if self._states.get(address) is not ws:
            self._states[address] = ws
            self._applied.pop(address, None)
            self.aggregator.worker_seen(address, str(ws.name), now)
            self.departures.arrived(address, str(ws.name), now)

    def sample(self, address: str, ws: Any, now: float) -> None:
        """Sample one worker into the series and apply its payload if it is new."""
        self.aggregator.sample(address, now, worker_values(ws))
        reason = unmonitored_reason(ws)
        if reason is not None:
            self.unmonitored[address] = reason
        if self.apply_payload(address, ws, now):
            self._fetch_later(address)

    def apply_payload(self, address: str, ws: Any, now: float) -> bool:
        """Apply the worker's last heartbeat payload unless it was applied already.

        Returns True when the payload shows missed changes, so the worker's
        full state is needed.
        """
        payload = worker_payload(ws)
        if payload is None or payload is self._applied.get(address):
            return False
        self._applied[address] = payload
        return bool(self.aggregator.ingest(address, payload, now))

    def removed(self, address: str, now: float, stimulus_id: str = "") -> None:
        """A worker left: apply its last heartbeat, log why, stamp its removal.

        The worker can no longer be asked for its full state; changes its last
        payload missed stay counted as a gap.
        """
        ws = self._states.pop(address, None)
        if ws is not None:
            self.apply_payload(address, ws, now)
            self.departures.left(address, str(ws.name), stimulus_id, now)
        self._applied.pop(address, None)
        self.aggregator.worker_removed(address, now)

    async def fetch(self, address: str, timeout: float | None = None) -> None:
        """Fetch and apply one worker's full state (raises on failure).

        A worker known to run unmonitored is not asked; one that answers so
        is remembered, and :class:`Unmonitored` is raised for both.
        """
        if address in self.unmonitored:
            raise Unmonitored(self.unmonitored[address])
        timeout = self.fetch_timeout if timeout is None else timeout
        try:
            payload = await fetch_full_state(self.scheduler, address, timeout)
        except Unmonitored as exc:
            self.unmonitored[address] = str(exc)
            raise
        self.aggregator.ingest(address, payload, time())

    def _fetch_later(self, address: str) -> None:
        if address in self._fetching:
            return
        self._fetching.add(address)
        task = asyncio.ensure_future(self._guarded_fetch(address))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _guarded_fetch(self, address: str) -> None:
        try:
            await self.fetch(address)
        except asyncio.CancelledError:
            raise
        except Unmonitored:
            pass  # fetch remembered it
        except Exception:
            self.aggregator.count_error("fetch_worker_state")
            logger.debug("roastcoffea: full state of %s not fetched", address, exc_info=True)
        finally:
            self._fetching.discard(address)

    def _guarded_tick(self) -> None:
        try:
            self.tick()
        except Exception:
            self.aggregator.count_error("sampler")
            logger.debug("roastcoffea: sampler tick failed", exc_info=True)
