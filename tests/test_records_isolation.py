"""No run loses its records to another's, nor to its own length.

A collector takes its run's records from the scheduler while the run goes on, so a run
that sends more than the whole record store keeps every record; until taken, a collected
run's records stay whatever else arrives; records of spans nobody collects live in a
quarter of the store of their own and expire; a run whose client died is released. Real
coffea on the CMS files, real worker processes.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cloudpickle
import dask
import pytest
from distributed import Client, LocalCluster, get_worker
from measured_run import MeasuredProcessor, cms_fileset, dask_runner
from roast_testing import wait_for

from roastcoffea import MetricsCollector, RoastPlugin
from roastcoffea.plugin import flush, snapshot, stop
from roastcoffea.plugin.client.calls import call_handler
from roastcoffea.plugin.protocol import PLUGIN_NAME, RECORDS_HANDLER

pytestmark = pytest.mark.cluster

cloudpickle.register_pickle_by_value(sys.modules[__name__])

#: Records of a span nobody collects, each MiB, more than the whole store's 64 MiB.
FLOOD = 72
MIB = 1 << 20


def queue_uncollected(marker: bytes, size: int) -> bool:
    """A record made outside any collector (this task's span is Dask's default)."""
    return get_worker().plugins[PLUGIN_NAME].queue_record(marker + b"." * size)


def held(client: Client, marker: bytes) -> int:
    """The records holding ``marker`` that the scheduler keeps (no flush, no release)."""
    return sum(r["data"].startswith(marker) for r in snapshot(client, flush=False)["records"])


def queue_in_run(marker: bytes, size: int) -> bool:
    """A record made by this task, in its run's span."""
    worker = get_worker()
    span = worker.state.tasks[worker.get_current_task()].span_id
    return worker.plugins[PLUGIN_NAME].queue_record(marker + b"." * size, span)


def held_bytes(dask_scheduler: Any) -> int:
    """Bytes of records the scheduler's store holds."""
    return int(dask_scheduler.plugins[PLUGIN_NAME].aggregator.record_bytes)


def store(dask_scheduler: Any) -> dict[str, int]:
    counters = dask_scheduler.plugins[PLUGIN_NAME].aggregator.counters
    return {"records": counters["records"], "records_dropped": counters["records_dropped"]}


@pytest.fixture
def fresh(make_cluster: Callable[..., tuple[LocalCluster, Client]]) -> Client:
    client = make_cluster()[1]
    client.register_plugin(RoastPlugin(live=False))
    return client


def test_a_flood_of_uncollected_records_takes_nothing_from_a_collected_run(
    fresh: Client, cms_data: Path
) -> None:
    client = fresh

    def flood() -> None:
        # Another thread: its tasks carry no run annotation, so no collector takes them.
        done = client.map(queue_uncollected, [b"flood"] * FLOOD, [MIB] * FLOOD, pure=False)
        assert all(client.gather(done))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with MetricsCollector(client, live=False) as mc:
            _, report = dask_runner(client)(
                cms_fileset(cms_data), MeasuredProcessor(), treename="Events"
            )
            # Every chunk record is on the scheduler (the results are here); then more
            # than the whole store arrives for a span nobody collects.
            flooding = threading.Thread(target=flood)
            flooding.start()
            flooding.join(timeout=300)
            assert not flooding.is_alive()
            mc.set_coffea_report(report)
    metrics = mc.get_metrics()
    assert metrics["num_chunks"] == report["chunks"]
    assert metrics["total_events_from_chunks"] == report["entries"]
    assert metrics["record_coverage"]["complete"] is True
    assert metrics["monitoring"]["run_records_dropped"] == 0
    # The flood churned in its own quarter: most of it was dropped, and what stays of it
    # fits there.
    counts = client.run_on_scheduler(store)
    assert counts["records_dropped"] >= FLOOD - 16
    assert held(client, b"flood") <= 16


def test_a_run_that_sends_more_than_the_store_keeps_every_record(
    fresh: Client, cms_data: Path
) -> None:
    """120 MiB of the run's own records pass through the 64 MiB store, in batches small
    enough for it; the collector's stream takes each batch before the next is sent."""
    client = fresh
    batches, per_batch = 15, 8
    with (
        dask.config.set({"roastcoffea.record-stream-interval": "200ms"}),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore", RuntimeWarning)
        with MetricsCollector(client, live=False) as mc:
            _, report = dask_runner(client)(
                cms_fileset(cms_data), MeasuredProcessor(), treename="Events"
            )
            for _ in range(batches):
                sent = client.map(queue_in_run, [b"big"] * per_batch, [MIB] * per_batch, pure=False)
                assert all(client.gather(sent))
                emptied = wait_for(
                    lambda: client.run_on_scheduler(held_bytes),
                    lambda held: held < MIB,
                    timeout=60,
                )
                assert emptied < MIB
            mc.set_coffea_report(report)
    metrics = mc.get_metrics()
    monitoring = metrics["monitoring"]
    # every big record reached the collector (undecodable, so skipped by the decode)
    assert monitoring["records_skipped"] == batches * per_batch
    assert monitoring["run_records_dropped"] == 0
    assert monitoring["records_streamed"] >= batches * per_batch
    assert metrics["num_chunks"] == report["chunks"]
    assert metrics["record_coverage"]["complete"] is True
    assert client.run_on_scheduler(store)["records_dropped"] == 0
    assert client.run_on_scheduler(held_bytes) == 0  # the exit released the rest


def test_a_run_whose_exit_takes_no_snapshot_keeps_what_its_stream_took(
    fresh: Client, cms_data: Path
) -> None:
    client = fresh
    with (
        dask.config.set({"roastcoffea.record-stream-interval": "200ms"}),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore", RuntimeWarning)
        with MetricsCollector(client, live=False) as mc:
            _, report = dask_runner(client)(
                cms_fileset(cms_data), MeasuredProcessor(), treename="Events"
            )
            flush(client)  # every chunk's record is on the scheduler; then the stream's
            taken = wait_for(
                lambda: client.run_on_scheduler(held_bytes), lambda held: held == 0, timeout=60
            )
            assert taken == 0
            stop(client)  # the plugin is gone: the exit finds no snapshot to take
            mc.set_coffea_report(report)
    assert mc.snapshot is None
    assert any(error.startswith("snapshot:") for error in mc.collector_errors)
    assert len(mc.chunk_metrics) == report["chunks"]
    metrics = mc.get_metrics()
    assert metrics["total_events_from_chunks"] == report["entries"]
    assert metrics["monitoring"]["records_streamed"] >= report["chunks"]


def slow_records_handler(dask_scheduler: Any, seconds: float) -> None:
    """Make the scheduler answer the record stream ``seconds`` late."""
    handler = dask_scheduler.handlers[RECORDS_HANDLER]

    async def slowly(**kwargs: Any) -> Any:
        await asyncio.sleep(seconds)
        return handler(**kwargs)

    dask_scheduler.handlers[RECORDS_HANDLER] = slowly


def test_a_stream_call_that_hangs_keeps_the_exit_within_its_time(fresh: Client) -> None:
    client = fresh
    probe, flush_timeout = 1.0, 3.0
    settings = {
        "roastcoffea.record-stream-interval": "100ms",
        "roastcoffea.probe-timeout": probe,
        "roastcoffea.flush-timeout": flush_timeout,
    }
    with dask.config.set(settings), MetricsCollector(client, live=False) as mc:
        client.run_on_scheduler(slow_records_handler, seconds=60.0)
        sent = client.map(queue_in_run, [b"late"] * 4, [10] * 4, pure=False)
        assert all(client.gather(sent))
        time.sleep(0.5)  # a call is now on its way, and answers in a minute
    assert mc.exit_seconds < probe + flush_timeout
    assert any("had not answered" in note for note in mc.notes)
    assert mc.run.records_skipped == 4  # unacknowledged: the exit's snapshot carried them


def test_a_reply_lost_on_its_way_loses_no_record(
    make_cluster: Callable[..., tuple[LocalCluster, Client]],
) -> None:
    """The stream's handler drops a record only once a later call acknowledges it, and
    only for the client that declared the run."""
    cluster, client = make_cluster()
    client.register_plugin(RoastPlugin(live=False))
    with (
        dask.config.set({"roastcoffea.record-stream-interval": "1h"}),  # the test calls
        MetricsCollector(client, live=False) as mc,
    ):
        sent = client.map(queue_in_run, [b"mine"] * 3, [10] * 3, pure=False)
        assert all(client.gather(sent))
        flush(client)
        run = {"span_id": mc.span_id, "tag": mc.name, "client_id": client.id}
        first = call_handler(client, RECORDS_HANDLER, **run)
        again = call_handler(client, RECORDS_HANDLER, **run)
        assert first["streamed"] is True and len(first["records"]) == 3
        assert again == first  # the first reply "lost": everything sent again
        with (
            Client(cluster) as other,
            pytest.raises(ValueError, match="not the client that declared"),
        ):
            call_handler(other, RECORDS_HANDLER, **{**run, "client_id": other.id})
        with pytest.raises(ValueError, match="acked must be a record number"):
            call_handler(client, RECORDS_HANDLER, **run, acked=-1)
        taken = call_handler(client, RECORDS_HANDLER, **run, acked=first["last"])
        assert list(taken["records"]) == [] and taken["last"] == first["last"]
    # acknowledged, so dropped: the exit's snapshot did not carry them again
    assert mc.run.records_skipped == 0
    assert client.run_on_scheduler(held_bytes) == 0


def test_uncollected_records_expire(
    make_cluster: Callable[..., tuple[LocalCluster, Client]],
) -> None:
    _, client = make_cluster()
    with dask.config.set({"roastcoffea.uncollected-records-timeout": "1s"}):
        client.register_plugin(RoastPlugin(live=False, interval=0.2))
    assert client.submit(queue_uncollected, b"old", 10, pure=False).result() is True
    assert held(client, b"old") == 1
    assert wait_for(lambda: held(client, b"old"), lambda n: n == 0, timeout=30) == 0
    assert client.run_on_scheduler(store)["records_dropped"] == 0  # expired, not dropped


def test_a_run_whose_client_died_is_released(
    make_cluster: Callable[..., tuple[LocalCluster, Client]], cms_data: Path
) -> None:
    cluster, client = make_cluster()
    client.register_plugin(RoastPlugin(live=False, interval=0.2))
    gone = Client(cluster)
    collector = MetricsCollector(gone, live=False)
    with dask.config.set({"roastcoffea.record-stream-interval": "1h"}):  # all stay held
        collector.__enter__()
    span_id = collector.span_id
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _, report = dask_runner(gone)(cms_fileset(cms_data), MeasuredProcessor(), treename="Events")
    left = snapshot(client, span_id=span_id, flush=False)["records"]
    assert sum(1 for r in left if b"chunk" in r["data"]) >= report["chunks"]
    gone.close()  # the client dies inside its block: its exit never comes
    left = wait_for(
        lambda: snapshot(client, span_id=span_id, flush=False)["records"],
        lambda records: records == [],
        timeout=30,
    )
    assert left == []
