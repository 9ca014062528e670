"""``async with MetricsCollector(client)`` with an asynchronous client on a real LocalCluster."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from conftest import local_cluster
from distributed import Client
from roast_testing import IDLE_KEY, keys, mismatches, our_span_metrics

from roastcoffea import MetricsCollector

pytestmark = pytest.mark.cluster

TASKS = 12


def burn(x: int) -> int:
    """Busy for 20 ms of thread time, so every task leaves thread-cpu digests."""
    end = time.thread_time() + 0.02
    while time.thread_time() < end:
        pass
    return x + 1


async def heartbeat(dask_worker: Any) -> None:
    await dask_worker.heartbeat()  # Dask's span totals move with the heartbeats


async def collect_async() -> dict[str, Any]:
    async with (
        local_cluster(asynchronous=True) as cluster,
        Client(cluster, asynchronous=True) as client,
    ):
        first = sorted(cluster.scheduler.workers)[0]
        async with MetricsCollector(client, live=False) as collector:
            futures = client.map(burn, range(TASKS), key=keys("async-burn", TASKS), workers=first)
            results = await client.gather(futures)
        await client.run(heartbeat)
        span = cluster.scheduler.extensions["spans"].spans[collector.span_id]
        theirs = dict(span.cumulative_worker_metrics)
        theirs.pop(IDLE_KEY, None)
        try:
            with MetricsCollector(client, live=False):
                refused = None
        except RuntimeError as exc:
            refused = str(exc)
        return {
            "collector": collector,
            "results": results,
            "theirs": theirs,
            "worker": first,
            "refused": refused,
        }


@pytest.fixture(scope="module")
def async_run() -> dict[str, Any]:
    return asyncio.run(collect_async())


def test_async_with_counts_the_work_of_its_block(async_run: dict[str, Any]) -> None:
    collector = async_run["collector"]
    assert async_run["results"] == list(range(1, TASKS + 1))
    assert collector.collector_errors == []
    tasks = [t for t in collector.snapshot["tasks"] if t["prefix"] == "async-burn"]
    assert sum(t["tasks"] for t in tasks) == TASKS
    assert {t["worker"] for t in tasks} == {async_run["worker"]}


def test_async_with_digests_equal_dask_own_span_totals(async_run: dict[str, Any]) -> None:
    ours = our_span_metrics(async_run["collector"].snapshot)
    assert ours[("execute", "async-burn", "thread-cpu", "seconds")] >= 0.02 * TASKS
    assert mismatches(ours, async_run["theirs"]) == {}


def test_sync_with_on_the_event_loop_says_to_use_async_with(async_run: dict[str, Any]) -> None:
    # A plain `with` on the loop would block the loop its own round trips need.
    assert async_run["refused"] is not None and "async with" in async_run["refused"]
