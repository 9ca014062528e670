"""Per-worker digests (Dask's fine performance metrics) against Dask's own span totals."""

from __future__ import annotations

import uuid
from typing import Any

import distributed
from distributed import Client, get_worker
from roast_testing import dask_span_metrics, keys, mismatches, our_span_metrics, wait_for

from roastcoffea import RoastPlugin
from roastcoffea.demo.tasks import burn, combine, nap
from roastcoffea.plugin import snapshot
from roastcoffea.plugin.protocol import RECORDS_OP

BURN_S = NAP_S = 0.2
N = 4
#: The activities that split a task's time on its thread.
THREAD = ("thread-cpu", "thread-noncpu")


def assert_equal_to_dask(client: Client, span_id: str, ours: dict[tuple, float]) -> None:
    """Dask updates span metrics at heartbeats: poll its side, never ours."""
    assert ours, "no digests in our snapshot"
    theirs = wait_for(
        lambda: dask_span_metrics(client, span_id),
        lambda t: not mismatches(ours, t),
        timeout=20,
    )
    assert mismatches(ours, theirs) == {}


def test_span_digests_equal_dask_span_metrics(roast: Client) -> None:
    client = roast
    # One worker burns, the other sleeps (placement pinned).
    burner, sleeper = sorted(client.scheduler_info()["workers"])
    with distributed.span("t") as span_id:
        futures = client.map(burn, [BURN_S] * N, key=keys("t-burn", N), workers=[burner])
        futures += client.map(nap, [NAP_S] * N, key=keys("t-nap", N), workers=[sleeper])
        client.gather(futures)
    ours = our_span_metrics(snapshot(client, span_id=span_id))
    assert_equal_to_dask(client, span_id, ours)
    # burn spins until its thread has used BURN_S of its own CPU clock, which no
    # other process's load can fill: so much thread-cpu, whatever the machine does.
    assert ours[("execute", "t-burn", "thread-cpu", "seconds")] >= N * BURN_S
    # nap sleeps NAP_S of wall time: its thread time (CPU or not) covers at least that.
    nap_thread = sum(ours[("execute", "t-nap", part, "seconds")] for part in THREAD)
    assert nap_thread >= N * NAP_S


def test_snapshot_right_after_the_last_result_is_complete(roast: Client) -> None:
    client = roast
    with distributed.span("outer"), distributed.span("inner") as inner:
        pass
    with distributed.span("final") as span_id:
        leaves = client.map(nap, [0.0] * 40, key=keys("final-nap", 40))
        total = client.submit(combine, *leaves, key=keys("final-combine", 1)[0])
        total.result()
        snap = snapshot(client, span_id=span_id)  # no sleep, no heartbeat wait
    assert snap["prefixes"]["final-combine"]["tasks"] == 1
    assert snap["prefixes"]["final-nap"]["tasks"] == 40
    ours = our_span_metrics(snap)
    assert ("execute", "final-combine", "thread-cpu", "seconds") in ours
    assert_equal_to_dask(client, span_id, ours)
    # A span that ran nothing has nothing.
    assert our_span_metrics(snapshot(client, span_id=inner, flush=False)) == {}


def queue(marker: bytes) -> bool:
    return get_worker().plugins["roastcoffea"].queue_record(marker)


def test_a_queued_record_arrives_exactly_once(make_cluster: Any) -> None:
    # A cluster of its own: the opaque marker is no record the other tests could decode.
    _, client = make_cluster()
    client.register_plugin(RoastPlugin())
    marker = b"record-" + uuid.uuid4().hex.encode()

    def count(snap: dict[str, Any]) -> int:
        return sum(record["data"] == marker for record in snap["records"])

    assert client.submit(queue, marker, pure=False).result() is True
    first = snapshot(client)
    assert count(first) == 1
    # It is sent once, on the worker's event stream; heartbeat payloads do not repeat it.
    seen = {a: first["workers"][a]["payloads"] for a in client.scheduler_info()["workers"]}
    later = wait_for(
        lambda: snapshot(client, flush=False),
        lambda s: all(s["workers"][a]["payloads"] >= n + 2 for a, n in seen.items()),
        timeout=20,
    )
    assert all(later["workers"][a]["payloads"] >= n + 2 for a, n in seen.items())
    assert count(later) == 1
    assert count(snapshot(client)) == 1


def send_records(message: dict[str, Any]) -> None:
    """Send ``message`` as the records op of this worker's stream (from its task thread)."""
    worker = get_worker()
    worker.loop.add_callback(worker.batched_send, {"op": RECORDS_OP, **message})


def chunk_totals_exported(dask_scheduler: Any) -> tuple[dict[str, int], dict[str, int]]:
    datasets = dask_scheduler.plugins["roastcoffea"].totals.datasets
    return {d: t.chunks for d, t in datasets.items()}, {d: t.events for d, t in datasets.items()}


def test_a_malformed_records_message_is_counted_and_the_rest_kept(make_cluster: Any) -> None:
    _, client = make_cluster()
    client.register_plugin(RoastPlugin(prometheus=True))
    marker = b"record-" + uuid.uuid4().hex.encode()
    message = {
        "data": [marker, 3, "text"],
        "chunks": [["d", 5, 10, 0.5], ["d", -1, 0, None], "junk"],
    }
    # The record goes out on the worker's stream before the task's end.
    client.submit(send_records, message, pure=False).result()
    snap = snapshot(client)
    assert [r["data"] for r in snap["records"]] == [marker]
    assert snap["errors"] == {"record_not_bytes": 2, "chunk_totals": 2}
    assert client.run_on_scheduler(chunk_totals_exported) == ({"d": 1}, {"d": 5})
    # Nothing reached Dask: the worker stays and runs the next task.
    assert client.submit(nap, 0.0, 7, pure=False).result() == 7
    assert len(client.scheduler_info()["workers"]) == 2


def test_missed_payloads_are_recovered_without_a_flush(make_cluster: Any) -> None:
    # window=1: each payload carries one heartbeat's changes, while the sampler
    # reads every second heartbeat, so it must fetch the full state itself.
    _, client = make_cluster()
    client.register_plugin(RoastPlugin(interval=1.0, window=1))
    with distributed.span("gappy") as span_id:
        client.gather(client.map(nap, [0.1] * 20, key=keys("gappy", 20)))

    def settled() -> tuple[dict, dict, dict]:
        snap = snapshot(client, span_id=span_id, flush=False)
        return snap, our_span_metrics(snap), dask_span_metrics(client, span_id)

    snap, ours, theirs = wait_for(
        settled,
        lambda s: (
            bool(s[1])
            and not mismatches(s[1], s[2])
            and all(w["flushes"] >= 1 for w in s[0]["workers"].values())
        ),
        timeout=20,
    )
    assert mismatches(ours, theirs) == {}
    for address, worker in snap["workers"].items():
        assert worker["gaps"] >= 1, address
        assert worker["flushes"] >= 1, address
    assert "fetch_worker_state" not in snap["errors"]


def changes_followed(dask_worker: Any) -> bool:
    from roastcoffea.plugin.worker.plugin import _changed_since_heartbeat

    tracker = dask_worker.plugins["roastcoffea"]._tracker
    return _changed_since_heartbeat(dask_worker) is not None and "execute" in tracker.followed


def test_payloads_follow_dasks_changes_instead_of_scanning(roast: Client) -> None:
    # On a real worker the tracker gets the heartbeat's changed keys from Dask's spans
    # extension; without them every payload would scan digests_total, which only grows.
    assert all(roast.run(changes_followed).values())


def file_and_pay(dask_worker: Any, span_id: str, values: list[float]) -> list[Any]:
    """Sum a phase digest per value, read the heartbeat payload that files it and
    the worker's own total: ``[(in the payload, in digests_total), ...]``."""
    from roastcoffea import _native
    from roastcoffea.phase_vocabulary import digest_labels

    plugin = dask_worker.plugins["roastcoffea"]
    layout = (False, (), (), False)  # no output measured, codec, helper thread, run queue
    labels = digest_labels(layout)
    activity, unit = labels[0]
    key = ("execute", span_id, "summed", activity, unit)
    seen = []
    for value in values:
        plugin._phase_sums.add((span_id, "summed"), (layout, [value] * len(labels)))
        payload = _native.decode_payload(plugin._payload(dask_worker))["digests"]
        seen.append((payload.get(key), dask_worker.digests_total.get(key)))
    return seen


def test_payloads_leave_the_phases_to_the_records_and_dask_files_them(make_cluster: Any) -> None:
    # The phases reach the scheduler with each task's records (a worker's death before
    # its next heartbeat cannot lose them): a payload carrying them too would count
    # them twice. Dask's own totals still get them, filed at each heartbeat.
    _, client = make_cluster(n_workers=1)
    client.register_plugin(RoastPlugin())
    with distributed.span("summed") as span_id:  # a span the scheduler knows
        client.submit(nap, 0.0, pure=False).result()
    seen = client.run(file_and_pay, span_id=span_id, values=[1.5, 2.0, 0.25])
    assert list(seen.values()) == [[(None, 1.5), (None, 3.5), (None, 3.75)]]
