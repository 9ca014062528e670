"""The live stream: deltas pushed to clients subscribed to the "roastcoffea" topic."""

from __future__ import annotations

from typing import Any

from distributed import Client
from roast_testing import wait_for

from roastcoffea.demo.tasks import nap

N_TASKS = 30


def subscribers(dask_scheduler: Any) -> int:
    from roastcoffea.plugin.dask_versions import topic_subscribers

    return topic_subscribers(dask_scheduler, "roastcoffea")


def published_by_two_ticks(dask_scheduler: Any) -> int:
    plugin = dask_scheduler.plugins["roastcoffea"]
    before = len(dask_scheduler.get_events("roastcoffea"))
    plugin.tick()
    plugin.tick()
    return len(dask_scheduler.get_events("roastcoffea")) - before


def test_subscribed_client_receives_deltas(roast: Client) -> None:
    client = roast
    events: list[tuple[float, dict]] = []
    client.subscribe_topic("roastcoffea", events.append)
    try:
        assert wait_for(lambda: len(events), lambda n: n >= 1, timeout=10) >= 1
        mark = len(events)
        client.gather(client.map(nap, [0.01] * N_TASKS, range(N_TASKS), pure=False))
        done = wait_for(
            lambda: sum(msg["tasks"] for _, msg in events[mark:]),
            lambda n: n >= N_TASKS,
            timeout=10,
        )
        assert done == N_TASKS
    finally:
        client.unsubscribe_topic("roastcoffea")
        # distributed keeps a handler after unsubscribing; the next test's client must not see it.
        client._event_handlers.pop("roastcoffea", None)

    deltas = [msg for _, msg in events]
    assert {"time", "interval", "tasks", "erred", "transition_rate_hz", "workers"} <= set(
        deltas[-1]
    )
    assert set(deltas[-1]["workers"]) == set(client.scheduler_info()["workers"])
    assert all(w["memory"] > 0 for w in deltas[-1]["workers"].values())
    assert max(d["transition_rate_hz"] for d in deltas[mark:]) > 0
    times = [d["time"] for d in deltas]
    assert times == sorted(times)

    assert wait_for(lambda: client.run_on_scheduler(subscribers), lambda n: n == 0, 10) == 0
    assert client.run_on_scheduler(published_by_two_ticks) == 0
