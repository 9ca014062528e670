"""Exact chunk totals under faults: a worker killed, restarted by its nanny, scaled away.

Real coffea on the CMS files of tests/data, real worker processes. Dask recomputes the
results lost with a worker, and every execution sends a chunk record; each work
item must still count once, equal to coffea's own report, and the extra
executions must be reported as recomputed, equal to Dask's own count of how often
the processor tasks finished (the scheduler's transition log).
"""

from __future__ import annotations

import math
import os
import signal
import sys
import threading
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import awkward as ak
import cloudpickle
import dask
import pytest
from coffea import processor
from distributed import Client
from distributed.utils import open_port
from measured_run import CHUNKSIZE, cms_fileset, dask_runner
from roast_testing import wait_for

from roastcoffea import MetricsCollector, track_metrics

cloudpickle.register_pickle_by_value(sys.modules[__name__])

#: The scheduler keeps every transition of these short runs in its log.
LOG_LENGTH = 100_000

#: Environment variable counting the executions of process() in a worker process
#: (the processor is unpickled afresh for every task, with fresh module globals).
EXECUTIONS = "ROASTCOFFEA_TEST_EXECUTIONS"


class KillOnce(processor.ProcessorABC):
    """Kills its worker process at its second execution there, once per marker file.

    By then the process holds the result of its first execution, which no
    reduction has taken yet (coffea reduces 20 results, or all of a short tail,
    at a time), so Dask must compute that work item again.
    """

    def __init__(self, marker: str | None, nap: float = 0.0) -> None:
        self.marker = marker
        self.nap = nap

    @track_metrics
    def process(self, events: Any) -> dict[str, Any]:
        executions = int(os.environ.get(EXECUTIONS, "0")) + 1
        os.environ[EXECUTIONS] = str(executions)
        if self.marker and executions == 2:
            try:
                os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                pass
            else:
                os._exit(1)
        time.sleep(self.nap)
        return {"events": len(events), "muons": int(ak.sum(ak.num(events.Muon)))}

    def postprocess(self, accumulator: Any) -> Any:
        return accumulator


def finished_processor_tasks(client: Client, prefix: str) -> int:
    """How often Dask's scheduler saw a processor task finish (processing -> memory)."""

    def count(dask_scheduler: Any, prefix: str) -> int:
        return sum(
            1
            for key, start, finish, *_ in dask_scheduler.transition_log
            if start == "processing" and finish == "memory" and str(key).startswith(prefix)
        )

    return client.run_on_scheduler(count, prefix=prefix)


def run_measured(
    client: Client, cms_data: Path, proc: KillOnce, during: Any = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    runner = dask_runner(client)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with MetricsCollector(client, live=False) as collector:
            if during is not None:
                during.start()
            output, report = runner(cms_fileset(cms_data), proc, treename="Events")
            collector.set_coffea_report(report)
    assert output["events"] == report["entries"]
    return collector.get_metrics(), report


def assert_counts_once(metrics: dict[str, Any], report: dict[str, Any], finished: int) -> None:
    assert metrics["num_chunks"] == report["chunks"]
    assert metrics["total_events_from_chunks"] == report["entries"]
    assert metrics["total_events"] == report["entries"]
    per_dataset = metrics["per_dataset"]
    assert sum(d["num_chunks"] for d in per_dataset.values()) == report["chunks"]
    assert sum(d["total_events"] for d in per_dataset.values()) == report["entries"]
    items = Counter(
        (r["file"], r["entry_start"], r["entry_stop"]) for r in metrics["raw_chunk_metrics"]
    )
    assert set(items.values()) == {1}
    # Every execution Dask saw finish sent its record: the kept ones and the recomputed.
    assert metrics["num_chunks"] + metrics["recomputed_chunks"] == finished


@pytest.fixture
def kill_cluster(make_cluster: Any) -> tuple[Any, Client]:
    with dask.config.set({"distributed.admin.low-level-log-length": LOG_LENGTH}):
        return make_cluster(n_workers=1, worker_port=open_port())


def test_a_killed_worker_restarted_by_its_nanny_counts_each_chunk_once(
    kill_cluster: tuple[Any, Client], cms_data: Path, tmp_path: Path
) -> None:
    _, client = kill_cluster
    address = next(iter(client.scheduler_info()["workers"]))
    metrics, report = run_measured(client, cms_data, KillOnce(str(tmp_path / "killed")))
    assert (tmp_path / "killed").exists()
    finished = finished_processor_tasks(client, "KillOnce")
    assert_counts_once(metrics, report, finished)
    assert metrics["recomputed_chunks"] >= 1  # the result held by the killed process
    assert metrics["recomputed_events"] >= CHUNKSIZE // 2
    assert metrics["recomputed_chunk_cpu_seconds"] > 0
    # Its nanny brought it back at the same address: lost, and restarted.
    assert next(iter(client.scheduler_info()["workers"])) == address
    assert [w["address"] for w in metrics["lost_workers"]] == [address]
    assert [w["restarted_as"] for w in metrics["restarted_workers"]] == [address]
    assert metrics["retired_workers"] == []


def test_a_worker_killed_among_two_counts_each_chunk_once(
    make_cluster: Any, cms_data: Path, tmp_path: Path
) -> None:
    with dask.config.set({"distributed.admin.low-level-log-length": LOG_LENGTH}):
        _, client = make_cluster()
    metrics, report = run_measured(client, cms_data, KillOnce(str(tmp_path / "killed")))
    assert (tmp_path / "killed").exists()
    assert_counts_once(metrics, report, finished_processor_tasks(client, "KillOnce"))


def test_a_cluster_scaled_down_mid_run_counts_each_chunk_once(
    make_cluster: Any, cms_data: Path
) -> None:
    with dask.config.set({"distributed.admin.low-level-log-length": LOG_LENGTH}):
        cluster, client = make_cluster()

    def scale_down_after_some_chunks() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if finished_processor_tasks(client, "KillOnce") >= 4:
                break
            time.sleep(0.05)
        cluster.scale(1)

    scaler = threading.Thread(target=scale_down_after_some_chunks)
    metrics, report = run_measured(client, cms_data, KillOnce(None, nap=0.1), during=scaler)
    scaler.join()
    assert len(client.scheduler_info()["workers"]) == 1
    assert_counts_once(metrics, report, finished_processor_tasks(client, "KillOnce"))
    assert len(metrics["retired_workers"]) == 1  # asked to leave: neither lost nor restarted
    assert metrics["lost_workers"] == metrics["restarted_workers"] == []


def stop_heartbeats(dask_worker: Any) -> int:
    """Stop the worker's heartbeats; return its process id."""
    dask_worker.periodic_callbacks["heartbeat"].stop()
    return os.getpid()


def test_a_worker_killed_after_its_last_result_keeps_every_tasks_phases(
    kill_cluster: tuple[Any, Client], cms_data: Path
) -> None:
    """Nothing of the worker's reaches the scheduler but its event stream (no heartbeat,
    and the exit's flush finds it dead): each task's phases ride with its records."""
    _, client = kill_cluster
    ((address, pid),) = client.run(stop_heartbeats).items()
    worker_id = client.scheduler_info()["workers"][address]["id"]

    def the_killed_process_is_gone(workers: dict[str, Any]) -> bool:
        return workers.get(address, {}).get("id") != worker_id

    runner = dask_runner(client)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with MetricsCollector(client, live=False) as collector:
            _, report = runner(cms_fileset(cms_data), KillOnce(None), treename="Events")
            collector.set_coffea_report(report)
            os.kill(pid, signal.SIGKILL)
            wait_for(lambda: client.scheduler_info()["workers"], the_killed_process_is_gone, 60)
    metrics = collector.get_metrics()
    assert metrics["num_chunks"] == report["chunks"]
    assert metrics["phase_tasks"] == report["chunks"]
    phases = metrics["raw_phase_records"]
    for phase, seconds in metrics["phase_wall_seconds"].items():
        assert seconds == pytest.approx(math.fsum(r["wall"][phase] or 0.0 for r in phases))
    assert [w["address"] for w in metrics["lost_workers"]] == [address]
