"""Malformed hook input is counted, never raised, and the cluster keeps working."""

from __future__ import annotations

import operator
from typing import Any

import distributed
from roast_testing import keys

from roastcoffea import RoastPlugin
from roastcoffea.plugin import snapshot

DONE = ("garbage-1", "processing", "memory")

#: (args, kwargs) for the scheduler plugin's transition, each one malformed.
MALFORMED = [
    ((), {}),
    (("garbage-1",), {"stimulus_id": "s"}),
    (("garbage-1", 5, 6.5), {"stimulus_id": "s"}),
    (DONE, {"stimulus_id": "s", "worker": 12, "startstops": "bad", "nbytes": "many"}),
    (
        DONE,
        {
            "stimulus_id": "s",
            "worker": "tcp://garbage:1",
            "startstops": [{"action": "compute", "start": "a", "stop": None}],
            "nbytes": 1,
        },
    ),
    (DONE, {"stimulus_id": "s", "worker": "tcp://garbage:1", "startstops": [1, 2], "nbytes": 1}),
]


def feed_garbage(dask_scheduler: Any, calls: list) -> dict[str, Any]:
    plugin = dask_scheduler.plugins["roastcoffea"]
    before = plugin.aggregator.hook_errors
    raised = []
    for args, kwargs in calls:
        try:
            plugin.transition(*args, **kwargs)
        except Exception as exc:
            raised.append(repr(exc))
    for hook in (plugin.add_worker, plugin.remove_worker):
        try:
            hook(None, 42)
        except Exception as exc:
            raised.append(repr(exc))
    return {"raised": raised, "counted": plugin.aggregator.hook_errors - before}


def test_malformed_hook_calls_are_counted_and_harmless(make_cluster: Any) -> None:
    # A cluster of its own: the counted errors must not reach other tests' snapshots.
    _, client = make_cluster()
    client.register_plugin(RoastPlugin())
    before = snapshot(client, flush=False)
    result = client.run_on_scheduler(feed_garbage, calls=MALFORMED)
    assert result["raised"] == []
    assert result["counted"] == len(MALFORMED)

    with distributed.span("after-garbage") as span_id:
        futures = client.map(operator.add, range(10), range(10), key=keys("after-garbage", 10))
        assert client.gather(futures) == [2 * i for i in range(10)]
    snap = snapshot(client, span_id=span_id)
    assert snap["prefixes"]["after-garbage"]["tasks"] == 10
    hook_errors = snap["counters"]["hook_errors"] - before["counters"]["hook_errors"]
    assert hook_errors == len(MALFORMED)
    for hook in ("add_worker", "remove_worker"):
        assert snap["errors"].get(hook, 0) == before["errors"].get(hook, 0) + 1, hook
