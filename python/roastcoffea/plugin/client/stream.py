"""A collector's records taken from the scheduler while its run goes on.

The scheduler's record store is bounded (64 MiB by default, shared by all runs); a
run whose records waited there for its exit would lose its oldest ones once it had
sent more than that. So while the block runs, a :class:`RecordStream` on the
client's event loop calls :data:`~roastcoffea.plugin.protocol.RECORDS_HANDLER` once
per sampler interval. Each call acknowledges what the reply before carried (the
scheduler then drops those) and takes what came since: the store holds a run's
records only between two calls, and a reply lost on its way loses nothing (its
records are sent again). The exit's snapshot carries the rest, after the last
acknowledgement (:func:`~roastcoffea.plugin.client.session.finish_session`).

The records are kept as the workers' bytes, a few times smaller than the rows
they decode to, until the exit decodes them with the snapshot's.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

from roastcoffea.plugin.protocol import RECORDS_HANDLER, RecordsReply


class RecordStream:
    """The records of one run, taken during the run.

    Parameters
    ----------
    client : distributed.Client
    span_id : str
        The run's span.
    tag : str
        The tag of collectors' spans: a run inside another collector's streams nothing
        (its records wait for both exits).
    interval : float
        Seconds between calls.
    """

    def __init__(self, client: Any, span_id: str, tag: str, interval: float) -> None:
        self.client = client
        self.span_id = span_id
        self.tag = tag
        self.interval = interval
        #: The records taken, as the snapshot lists them.
        self.records: list[dict[str, Any]] = []
        #: The newest record number received: the next call's acknowledgement.
        self.acked = 0
        self.calls = 0
        self.failures = 0
        #: Why the last call failed, or why the stream ended early.
        self.reason: str | None = None
        self._stop = asyncio.Event()
        self._future: concurrent.futures.Future[None] | None = None

    def start(self) -> None:
        """Start calling on the client's event loop (from any thread)."""
        loop = self.client.loop.asyncio_loop
        self._future = asyncio.run_coroutine_threadsafe(self._run(), loop)

    def stop(self, timeout: float) -> None:
        """Stop, waiting up to ``timeout`` seconds for a call on its way; a call that has
        not answered by then is abandoned: its records, unacknowledged, stay for the exit."""
        future = self._future
        if future is None:
            return
        self.client.loop.asyncio_loop.call_soon_threadsafe(self._stop.set)
        try:
            future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            self.reason = f"a call had not answered within {timeout:.3g} s of the exit"

    async def _run(self) -> None:
        while not self._stop.is_set():
            try:
                await asyncio.wait_for(self._stop.wait(), self.interval)
            except asyncio.TimeoutError:
                if not await self._take():
                    return

    async def _take(self) -> bool:
        """One call; False when the run does not stream (nested, or an older plugin)."""
        handler = getattr(self.client.scheduler, RECORDS_HANDLER)
        try:
            reply: RecordsReply | None = await handler(
                span_id=self.span_id, tag=self.tag, client_id=self.client.id, acked=self.acked
            )
        except Exception as exc:
            self.failures += 1
            self.reason = f"{type(exc).__name__}: {exc}"
            return True
        self.calls += 1
        if reply is None:
            self.reason = "the scheduler's RoastPlugin has no record stream"
            return False
        self.records.extend(reply["records"])
        self.acked = reply["last"]
        return reply["streamed"]
