"""The live stream: a small delta per sampler tick, pushed to subscribed clients.

A client receives it with::

    client.subscribe_topic("roastcoffea", lambda event: print(event[1]))

Each message is a plain dict (msgpack-able, string keys)::

    {"time": float,            # scheduler clock at the tick
     "interval": float,        # seconds since the previous delta
     "tasks": int,             # tasks that reached memory since the previous delta
     "erred": int,             # tasks that erred since the previous delta
     "events_per_s": float,    # transition records applied per second
     "chunks": int,            # coffea chunk records that arrived since the previous delta
     "chunk_events": int,      # Σ num_events of those chunks
     "chunk_bytes": int,       # Σ bytes read by those chunks (file open included when known)
     "phases": {phase: float}, # Σ wall seconds per phase of the tasks whose phase records came
     "workers": {address: {"memory": float | None, "cpu": float | None}}}

The chunk and phase figures come from the records workers send on their
event stream (decoded by the plugin only while someone listens), each counted
in the delta after it arrived.

Nothing is computed or published while no client is subscribed.
"""

from __future__ import annotations

from typing import Any

from roastcoffea.plugin.dask_versions import topic_subscribers
from roastcoffea.plugin.protocol import LIVE_TOPIC
from roastcoffea.plugin.scheduler.workers import worker_values


def _finished_counts(scheduler: Any) -> tuple[int, int]:
    """Cumulative (memory, erred) transition counts over all task prefixes."""
    memory = erred = 0
    for prefix in list(scheduler.task_prefixes.values()):
        counts = prefix.state_counts
        memory += counts.get("memory", 0)
        erred += counts.get("erred", 0)
    return memory, erred


def _phase_seconds(record: dict[str, Any]) -> dict[str, float]:
    """The wall seconds per phase of a phase record (unmeasured phases left out)."""
    wall = record.get("wall")
    if not isinstance(wall, dict):
        return {}
    return {
        str(phase): float(seconds)
        for phase, seconds in wall.items()
        if isinstance(seconds, (int, float)) and not isinstance(seconds, bool)
    }


class LiveStream:
    """Publishes deltas with ``scheduler.log_event`` while someone listens.

    Parameters
    ----------
    scheduler : distributed.Scheduler
    aggregator : roastcoffea._native.Aggregator
    """

    def __init__(self, scheduler: Any, aggregator: Any) -> None:
        self._scheduler = scheduler
        self._aggregator = aggregator
        self._last: tuple[float, int, int, int] | None = None
        # Chunks, events and bytes of the chunk records since the previous delta, and
        # the phase seconds of the phase records.
        self._chunks = [0, 0, 0]
        self._phases: dict[str, float] = {}

    @property
    def listening(self) -> bool:
        """Whether a client listened at the last tick (records are counted only then)."""
        return self._last is not None

    def add_chunk(self, events: int, nbytes: int) -> None:
        """Count a chunk a worker sent (its :func:`~roastcoffea.records.chunk_totals`)."""
        if self.listening:
            self._chunks[0] += 1
            self._chunks[1] += events
            self._chunks[2] += nbytes

    def add_phases(self, record: dict[str, Any]) -> None:
        """Count a decoded phase record a worker sent, for the next delta."""
        if self.listening and record.get("kind") == "phases":
            for phase, seconds in _phase_seconds(record).items():
                self._phases[phase] = self._phases.get(phase, 0.0) + seconds

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
            self._chunks = [0, 0, 0]
            self._phases = {}
            return False
        (chunks, chunk_events, chunk_bytes), self._chunks = self._chunks, [0, 0, 0]
        phases, self._phases = self._phases, {}
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
                "events_per_s": (events - last[3]) / dt,
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
