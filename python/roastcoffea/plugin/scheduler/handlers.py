"""The plugin's RPC handlers on the scheduler, called by name from a client.

A collector's entry is :data:`~roastcoffea.plugin.protocol.OPEN_HANDLER` (a sampler
pass, the plugin's settings and clock), its run streams its records with
:data:`~roastcoffea.plugin.protocol.RECORDS_HANDLER`, and its exit is
:data:`~roastcoffea.plugin.protocol.FINISH_HANDLER` (a pass, the flush, the snapshot
of its span and the release of its records), one round trip each. The lower-level
calls of :mod:`roastcoffea.plugin.client.calls` use the snapshot, flush and stop
handlers on their own. Every handler runs on the scheduler's event loop; a failure
is counted in the plugin's errors and raised to the caller, never into Dask.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from distributed.metrics import time

import roastcoffea.config as config
from roastcoffea.plugin.protocol import (
    FINISH_HANDLER,
    FLUSH_HANDLER,
    OPEN_HANDLER,
    PLUGIN_NAME,
    RECORDS_HANDLER,
    SNAPSHOT_HANDLER,
    STOP_HANDLER,
    FinishReply,
    FlushReply,
    OpenReply,
    RecordsReply,
)
from roastcoffea.plugin.scheduler.workers import Unmonitored

if TYPE_CHECKING:
    from roastcoffea.plugin.scheduler.plugin import RoastPlugin

#: Padding of a block's window: the series store times in milliseconds, so a
#: sample taken at the window's edge may be stored up to a millisecond outside.
WINDOW_PAD = 1e-3


class PluginHandlers:
    """The handlers of one started plugin (see the module docstring).

    Parameters
    ----------
    plugin : RoastPlugin
        Started: its aggregator, sampler and scheduler are read at each call.
    """

    def __init__(self, plugin: RoastPlugin) -> None:
        self.plugin = plugin

    def table(self) -> dict[str, Callable[..., Any]]:
        """Handler name -> handler, as they go into ``scheduler.handlers``."""
        return {
            OPEN_HANDLER: self.open,
            FINISH_HANDLER: self.finish,
            RECORDS_HANDLER: self.records,
            SNAPSHOT_HANDLER: self.snapshot,
            FLUSH_HANDLER: self.flush,
            STOP_HANDLER: self.stop,
        }

    def open(self) -> OpenReply:
        """Handler ``roastcoffea_open``: one sampler pass now; the settings and the clock."""
        plugin = self.plugin
        with plugin.guard("open", reraise=True):
            plugin.tick()
            return {
                "interval": plugin.interval,
                "live": plugin.live,
                "phases": plugin.phases,
                "time": time(),
            }

    def records(self, span_id: str, tag: str, client_id: str, acked: int = 0) -> RecordsReply:
        """Handler ``roastcoffea_records``: a collector's stream during its run.

        The run's records numbered up to ``acked`` are dropped (the collector has them)
        and the rest returned, with the newest one's number for the next call; a reply
        lost on its way loses nothing. The run's records are those of its span's subtree
        less the subtrees of other live runs inside it. Only the client that declared the
        run (``client_id``) may take them, none before the declaration arrives. A run
        inside a span tagged ``tag`` (another collector's block, which takes them at its
        own exit) streams nothing.
        """
        plugin = self.plugin
        with plugin.guard("records", reraise=True):
            acked = _acknowledged(acked)
            running = plugin.running
            declared_by = running.collectors.runs.get(span_id)
            if declared_by is None:
                return {"records": [], "last": acked, "streamed": True}
            if declared_by != client_id:
                raise ValueError(f"{client_id!r} is not the client that declared run {span_id!r}")
            running.spans.sync()
            if running.spans.inside(span_id, tag):
                return {"records": [], "last": acked, "streamed": False}
            own = running.collectors.own_spans(span_id)
            records, last = plugin.aggregator.stream_records(own, acked)
            return {"records": records, "last": last, "streamed": True}

    async def finish(
        self,
        span_id: str,
        t_from: float,
        t_to: float,
        timeout: float,
        tag: str,
        wall_time: float | None = None,
        acked: int = 0,
    ) -> FinishReply:
        """Handler ``roastcoffea_finish``: a collector's exit in one call.

        A sampler pass, the flush (``timeout`` seconds per worker), the records its stream
        acknowledged (``acked``, :meth:`records`) dropped, the records of the
        span's subtree dropped at the store's byte cap, the snapshot of the subtree over
        ``[t_from, t_to]`` (its end widened to the pass), the release of the span's
        records unless a span tagged ``tag`` encloses it, and the end of the run's
        collection (:mod:`~roastcoffea.plugin.scheduler.collectors`).
        ``wall_time``, the block's seconds, ends the run's row of the running totals.
        """
        tick = self.open()
        start = time()
        flushed = await self.flush(timeout=timeout, since=t_from)
        flush_seconds = time() - start
        t_to = max(t_to, tick["time"]) + WINDOW_PAD
        plugin = self.plugin
        with plugin.guard("finish", reraise=True):
            own = plugin.running.collectors.own_spans(span_id)
            plugin.aggregator.ack_records(own, _acknowledged(acked))
            subtree = plugin.running.spans.subtree(span_id)
            dropped = int(plugin.aggregator.records_dropped_in(subtree))
        data = self.snapshot(span_id=span_id, t_from=t_from, t_to=t_to, release_unless_inside=tag)
        plugin.running.collectors.ended(span_id)
        totals = self.plugin.totals
        if isinstance(wall_time, float) and math.isfinite(wall_time) and wall_time >= 0:
            with self.plugin.guard("end run"):
                if totals is not None:
                    totals.end_run(span_id, wall_time)
        return {
            "t_to": t_to,
            "flush": flushed,
            "flush_seconds": flush_seconds,
            "snapshot": data,
            "records_dropped": dropped,
        }

    def snapshot(
        self,
        span_id: str | None = None,
        t_from: float = 0.0,
        t_to: float = 0.0,
        release_unless_inside: str | None = None,
    ) -> bytes:
        """Handler ``roastcoffea_snapshot``: the aggregator as snapshot bytes.

        ``span_id`` keeps that span and its descendants, records included;
        ``t_from``/``t_to`` bound the series (``t_to=0`` is open-ended). With
        ``release_unless_inside`` (a collector's exit), the records of the span's
        subtree are then dropped, unless an enclosing span carries that tag: an
        enclosing collector takes them at its own exit.
        """
        plugin = self.plugin
        with plugin.guard("snapshot", reraise=True):
            aggregator, spans = plugin.aggregator, plugin.running.spans
            aggregator.drain()
            spans.sync()
            subtree = None if span_id is None else spans.subtree(span_id)
            data = aggregator.snapshot(spans=subtree, t_from=float(t_from), t_to=float(t_to))
            if (
                span_id is not None
                and release_unless_inside is not None
                and not spans.inside(span_id, release_unless_inside)
            ):
                aggregator.release_records(subtree)
            return data

    async def flush(self, timeout: float | None = None, since: float | None = None) -> FlushReply:
        """Handler ``roastcoffea_flush``: apply every worker's full state now.

        The unmonitored workers (that could not load roastcoffea, now or before
        they left) are not waited for; ``departures`` lists the workers that left
        since ``since`` (scheduler clock; None: none), see
        :mod:`roastcoffea.plugin.scheduler.departures`.
        """
        plugin = self.plugin
        with plugin.guard("flush", reraise=True):
            timeout = config.seconds("flush-timeout", timeout)
            sampler, now = plugin.running, time()
            workers = list(plugin.scheduler.workers.items())
            for address, ws in workers:
                sampler.watch(address, ws, now)
            results = await asyncio.gather(
                *(sampler.fetch(address, timeout) for address, _ in workers),
                return_exceptions=True,
            )
            errors = {}
            for (address, _), result in zip(workers, results, strict=True):
                if isinstance(result, BaseException) and not isinstance(result, Unmonitored):
                    plugin.count_error("flush")
                    errors[address] = f"{type(result).__name__}: {result}"
            plugin.aggregator.drain()
            sampler.spans.sync()
            unmonitored = dict(sampler.unmonitored)
            flushed = sum(1 for address, _ in workers if address not in unmonitored)
            departures = [] if since is None else sampler.departures.between(since, time())
            return {
                "workers": flushed - len(errors),
                "errors": errors,
                "unmonitored": unmonitored,
                "departures": departures,
            }

    async def stop(self) -> dict[str, Any]:
        """Handler ``roastcoffea_stop``: undo everything the plugin's start did.

        Afterwards the plugin is gone from the scheduler and from the workers, so
        registering a new ``RoastPlugin`` starts from scratch (Dask calls no hook on
        unregister, and an idempotent plugin left in ``scheduler.plugins`` would make
        a later ``register_plugin`` a silent no-op).
        """
        plugin = self.plugin
        plugin.detach()
        scheduler = plugin.scheduler
        errors: dict[str, str] = {}
        try:
            replies = await scheduler.unregister_worker_plugin(None, PLUGIN_NAME)
        except Exception as exc:
            errors["scheduler"] = f"{type(exc).__name__}: {exc}"
            replies = {}
        for address, reply in replies.items():
            if not (isinstance(reply, dict) and reply.get("status") == "OK"):
                errors[address] = repr(reply)
        if scheduler.plugins.get(plugin.name) is plugin:
            scheduler.remove_plugin(name=plugin.name)
        return {"workers": len(replies) - len(errors), "errors": errors}


def _acknowledged(acked: object) -> int:
    """A stream's acknowledgement: a record number, >= 0."""
    if not isinstance(acked, int) or isinstance(acked, bool) or not 0 <= acked < 1 << 64:
        raise ValueError(f"acked must be a record number (an int >= 0), not {acked!r}")
    return acked
