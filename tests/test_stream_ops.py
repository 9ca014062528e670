"""Records and final states travel as the plugin's own ops of the workers' batched streams.

Not through Dask's public event log: nothing of ours is stored in it, and a client cannot
add records or totals to a run. The ops are sent only to a scheduler that handles them,
and their handlers outlive the plugin, since an op the scheduler does not know, or a
handler that raises, ends the worker's stream and the scheduler removes the worker.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from distributed import get_worker
from roast_testing import wait_for

from roastcoffea import RoastPlugin
from roastcoffea.demo.tasks import nap
from roastcoffea.plugin import RoastWorkerPlugin, snapshot, stop
from roastcoffea.plugin.protocol import FINAL_STATE_OP, PLUGIN_NAME, RECORDS_OP
from roastcoffea.plugin.scheduler.intake import ignore

pytestmark = pytest.mark.cluster


def queue(marker: bytes) -> bool:
    return get_worker().plugins[PLUGIN_NAME].queue_record(marker)


def send_op(message: dict[str, Any]) -> None:
    """Send ``message`` on this worker's batched stream, bypassing the plugin."""
    worker = get_worker()
    worker.loop.add_callback(worker.batched_send, message)


def refused(dask_worker: Any) -> int:
    return dask_worker.plugins[PLUGIN_NAME].instrument_counters()["records_refused"]


def stream_handlers(dask_scheduler: Any) -> dict[str, str]:
    handlers = dask_scheduler.stream_handlers
    return {op: getattr(handlers.get(op), "__name__", "") for op in (RECORDS_OP, FINAL_STATE_OP)}


def dataset_chunks(dask_scheduler: Any) -> dict[str, int]:
    return {d: t.chunks for d, t in dask_scheduler.plugins[PLUGIN_NAME].totals.datasets.items()}


def new_marker() -> bytes:
    return b"record-" + uuid.uuid4().hex.encode()


def test_records_and_final_states_stay_out_of_dask_s_event_log(make_cluster: Any) -> None:
    _, client = make_cluster()
    client.register_plugin(RoastPlugin(live=False))
    first, second = sorted(client.scheduler_info()["workers"])
    marker = new_marker()
    assert client.submit(queue, marker, workers=[first], pure=False).result() is True
    # A worker that closes sends its full state in its teardown.
    client.retire_workers([second], close_workers=True)
    workers = wait_for(
        lambda: client.scheduler_info()["workers"],
        lambda workers: second not in workers,
        timeout=30,
    )
    assert second not in workers
    snap = snapshot(client)
    assert [r["data"] for r in snap["records"]].count(marker) == 1
    assert second in snap["workers"]
    topics = set(client.get_events())
    assert not {RECORDS_OP, FINAL_STATE_OP} & topics, topics
    assert all(not topic.startswith("roastcoffea") for topic in topics), topics


def test_a_client_cannot_add_records_or_totals(make_cluster: Any) -> None:
    _, client = make_cluster()
    client.register_plugin(RoastPlugin(live=False))
    worker = sorted(client.scheduler_info()["workers"])[0]
    marker = new_marker()
    forged = {"data": [marker], "chunks": [["forged", 1000, 10, 1.0]]}
    # As an event on the op's name (what an earlier version read records from) ...
    client.log_event(RECORDS_OP, forged)
    # ... and as the op itself on the client's own stream, posing as a worker.
    client._send_to_scheduler({"op": RECORDS_OP, "worker": worker, **forged})
    errors = wait_for(
        lambda: snapshot(client, flush=False)["errors"],
        lambda e: e.get("stream_op_not_from_a_worker") == 1,
        timeout=20,
    )
    assert errors == {"stream_op_not_from_a_worker": 1}
    assert marker not in [r["data"] for r in snapshot(client)["records"]]
    assert client.run_on_scheduler(dataset_chunks) == {}
    # The client's stream survived the refusal.
    assert client.submit(nap, 0.0, 3, pure=False).result() == 3


def test_a_malformed_op_from_a_worker_is_counted_and_the_worker_stays(
    make_cluster: Any,
) -> None:
    _, client = make_cluster()
    client.register_plugin(RoastPlugin(live=False))
    worker = sorted(client.scheduler_info()["workers"])[0]
    for message in (
        {"op": RECORDS_OP, "data": 7, "phases": 3},
        {"op": FINAL_STATE_OP, "data": "not bytes"},
        {"op": FINAL_STATE_OP, "data": b"\xc1 not a payload"},
    ):
        client.submit(send_op, message, workers=[worker], pure=False).result()
    errors = wait_for(
        lambda: snapshot(client, flush=False)["errors"],
        lambda e: sum(e.values()) >= 3,
        timeout=20,
    )
    assert errors.get("final_state_not_bytes") == 1
    assert errors.get("records") == 1
    assert client.submit(nap, 0.0, 5, workers=[worker], pure=False).result() == 5
    assert worker in client.scheduler_info()["workers"]


def test_a_worker_still_sending_after_the_plugin_is_gone_stays(make_cluster: Any) -> None:
    _, client = make_cluster()
    client.register_plugin(RoastPlugin(live=False))
    worker = sorted(client.scheduler_info()["workers"])[0]
    stop(client)
    assert client.run_on_scheduler(stream_handlers) == {
        RECORDS_OP: ignore.__name__,
        FINAL_STATE_OP: ignore.__name__,
    }
    message = {"op": RECORDS_OP, "data": [new_marker()]}
    client.submit(send_op, message, workers=[worker], pure=False).result()
    assert client.submit(nap, 0.0, 9, workers=[worker], pure=False).result() == 9
    assert worker in client.scheduler_info()["workers"]


def test_the_worker_plugin_alone_sends_nothing(make_cluster: Any) -> None:
    # Registered without RoastPlugin, the scheduler has no handler for the ops: sending
    # one would close the worker.
    _, client = make_cluster()
    client.register_plugin(RoastWorkerPlugin())
    worker = sorted(client.scheduler_info()["workers"])[0]
    assert client.run_on_scheduler(stream_handlers) == {RECORDS_OP: "", FINAL_STATE_OP: ""}
    assert client.submit(queue, new_marker(), workers=[worker], pure=False).result() is False
    assert client.run(refused, workers=[worker]) == {worker: 1}
    assert client.submit(nap, 0.0, 2, workers=[worker], pure=False).result() == 2
    assert worker in client.scheduler_info()["workers"]
