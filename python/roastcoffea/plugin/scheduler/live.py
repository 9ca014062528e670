"""The live stream: a small delta per sampler tick, pushed to subscribed clients.

A client receives it with::

    client.subscribe_topic("roastcoffea", lambda event: print(event[1]))

Each message is a plain dict (msgpack-able, string keys)::

    {"time": float,            # scheduler clock at the tick
     "interval": float,        # seconds since the previous delta
     "tasks": int,             # tasks that reached memory since the previous delta
     "erred": int,             # tasks that erred since the previous delta
     "transition_rate_hz": float,  # transition records applied per second
     "chunks": int,            # coffea chunk records that arrived since the previous delta
     "chunk_events": int,      # Σ num_events of those chunks
     "chunk_bytes": int,       # Σ bytes read by those chunks (file open included when known)
     "phases": {phase: float}, # Σ wall seconds per phase of the tasks that ended since
     "workers": {address: {"memory": float | None, "cpu": float | None}}}

The chunk figures are the differences of the scheduler's running totals
(:mod:`roastcoffea.plugin.scheduler.totals`, fed as the records arrive: no record is
decoded), the phase seconds those of the aggregator's digests, which each task's
phases reach with its records; each is counted in the delta after it arrived.

Nothing is computed or published while no client is subscribed.
"""

from __future__ import annotations

from typing import Any

import roastcoffea.phase_vocabulary as vocab
from roastcoffea.plugin.dask_versions import topic_subscribers
from roastcoffea.plugin.protocol import LIVE_TOPIC
from roastcoffea.plugin.scheduler.totals import RunningTotals
from roastcoffea.plugin.scheduler.workers import worker_values


def _finished_counts(scheduler: Any) -> tuple[int, int]:
    """Cumulative (memory, erred) transition counts over all task prefixes."""
    memory = erred = 0
    for prefix in list(scheduler.task_prefixes.values()):
        counts = prefix.state_counts
        memory += counts.get("memory", 0)
        erred += counts.get("erred", 0)
    return memory, erred


def _phase_totals(aggregator: Any) -> dict[str, float]:
    """Wall seconds per phase of every measured task so far, summed over workers: the
    aggregator's digests, as the Prometheus export reads them."""
    totals: dict[str, float] = {}
    for (_, activity, unit), value in aggregator.digest_totals("execute", "worker").items():
        phase = vocab.PHASE_OF_ACTIVITY.get(activity)
        if phase is not None and unit == vocab.WALL:
            totals[phase] = totals.get(phase, 0.0) + value
    return totals


class LiveStream:
    """Publishes deltas with ``scheduler.log_event`` while someone listens.

    Parameters
    ----------
    scheduler : distributed.Scheduler
    aggregator : roastcoffea._native.Aggregator
    totals : RunningTotals
    """

    def __init__(self, scheduler: Any, aggregator: Any, totals: RunningTotals) -> None:
        self._scheduler = scheduler
        self._aggregator = aggregator
        self._totals = totals
        # At the previous tick: its time, the finished and erred tasks, the transitions,
        # and the chunks' totals.
        self._last: tuple[float, int, int, int] | None = None
        self._last_chunks = (0, 0, 0)
        self._last_phases: dict[str, float] = {}

    def tick(self, now: float) -> bool:
        """Publish one delta if a client is subscribed.

        The first tick after a subscription only sets the baseline, so every
        published delta covers a known interval.

        Returns
        -------
        bool
            True when a delta was published.
        """
        # None means this Dask does not say: publish anyway (events are bounded).
        if topic_subscribers(self._scheduler, LIVE_TOPIC) == 0:
            self._last = None
            return False
        every = self._totals.all
        now_chunks = (every.chunks, every.events, every.bytes_read)
        chunks, chunk_events, chunk_bytes = (
            n - before for n, before in zip(now_chunks, self._last_chunks, strict=True)
        )
        self._last_chunks = now_chunks
        totals = _phase_totals(self._aggregator)
        phases = {p: v - self._last_phases.get(p, 0.0) for p, v in totals.items()}
        self._last_phases = totals
        memory, erred = _finished_counts(self._scheduler)
        events = int(self._aggregator.counters["events"])
        last, self._last = self._last, (now, memory, erred, events)
        if last is None or now <= last[0]:
            return False
        dt = now - last[0]
        self._scheduler.log_event(
            LIVE_TOPIC,
            {
                "time": now,
                "interval": dt,
                "tasks": memory - last[1],
                "erred": erred - last[2],
                "transition_rate_hz": (events - last[3]) / dt,
                "chunks": chunks,
                "chunk_events": chunk_events,
                "chunk_bytes": chunk_bytes,
                "phases": phases,
                "workers": self._workers(),
            },
        )
        return True

    def _workers(self) -> dict[str, dict[str, float | None]]:
        out = {}
        for address, ws in list(self._scheduler.workers.items()):
            values = worker_values(ws)
            out[address] = {"memory": values[0], "cpu": values[7]}
        return out
