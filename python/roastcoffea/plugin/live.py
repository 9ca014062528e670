"""The live stream: a small delta per sampler tick, pushed to subscribed clients.

A client receives it with::

    client.subscribe_topic("roastcoffea", lambda event: print(event[1]))

Each message is a plain dict (msgpack-able, string keys)::

    {"time": float,            # scheduler clock at the tick
     "interval": float,        # seconds since the previous delta
     "tasks": int,             # tasks that reached memory since the previous delta
     "erred": int,             # tasks that erred since the previous delta
     "events_per_s": float,    # transition records applied per second
     "workers": {address: {"memory": float | None, "cpu": float | None}}}

Nothing is computed or published while no client is subscribed.
"""

from __future__ import annotations

from typing import Any

from roastcoffea.plugin._compat import topic_subscribers
from roastcoffea.plugin._workers import PLUGIN_NAME, worker_values

#: Event topic of the live stream.
TOPIC = PLUGIN_NAME


def _finished_counts(scheduler: Any) -> tuple[int, int]:
    """Cumulative (memory, erred) transition counts over all task prefixes."""
    memory = erred = 0
    for prefix in list(scheduler.task_prefixes.values()):
        counts = prefix.state_counts
        memory += counts.get("memory", 0)
        erred += counts.get("erred", 0)
    return memory, erred


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
        if topic_subscribers(self._scheduler, TOPIC) == 0:
            self._last = None
            return False
        memory, erred = _finished_counts(self._scheduler)
        events = int(self._aggregator.counters["events"])
        last, self._last = self._last, (now, memory, erred, events)
        if last is None or now <= last[0]:
            return False
        dt = now - last[0]
        self._scheduler.log_event(
            TOPIC,
            {
                "time": now,
                "interval": dt,
                "tasks": memory - last[1],
                "erred": erred - last[2],
                "events_per_s": (events - last[3]) / dt,
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
