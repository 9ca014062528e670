"""A facility deployment: ``dask scheduler --preload roastcoffea`` and ``dask worker`` processes.

Everything is started from the command line, as an operator would: the scheduler with the
preload (or the same through Dask's configuration), two workers from one ``dask worker
--nworkers 2``, a third that joins while a collector runs, and one that is shut down before
the collector ends. The collector finds the plugin pair the preload installed. Two
analysts' clients share one such cluster (``shared_cluster_run.py``).
"""

from __future__ import annotations

import asyncio
import json
import operator
import os
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cloudpickle
import dask
import pytest
from distributed import Client
from roast_testing import wait_for

from roastcoffea import MetricsCollector
from roastcoffea.plugin.protocol import PLUGIN_NAME

pytestmark = pytest.mark.cluster

# Workers do not import this test module: ship its functions by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

DASK = [sys.executable, "-m", "distributed.cli"]


class Processes:
    """Command-line processes, stopped (and waited for) at the end."""

    def __init__(self) -> None:
        self.started: list[subprocess.Popen] = []

    def start(
        self, *args: str, env: dict[str, str] | None = None, log: Path | None = None
    ) -> subprocess.Popen:
        """Start ``python -m *args``; its stderr (Dask's log) goes to ``log`` if given."""
        with open(log or os.devnull, "wb") as stderr:
            process = subprocess.Popen(
                [sys.executable, "-m", *args],
                env={**os.environ, **(env or {})},
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
        self.started.append(process)
        return process

    def stop_all(self) -> None:
        for process in reversed(self.started):
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
        for process in self.started:
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()


@pytest.fixture
def processes() -> Iterator[Processes]:
    started = Processes()
    yield started
    started.stop_all()


def scheduler_address(path: Path) -> str:
    import json

    info = wait_for(lambda: json.loads(path.read_text()) if path.exists() else {}, bool, timeout=60)
    return info["address"]


def workers_of(client: Client, n: int) -> dict:
    return wait_for(lambda: client.scheduler_info()["workers"], lambda w: len(w) == n, timeout=120)


@pytest.mark.parametrize("how", ["flag", "config"])
def test_a_preloaded_scheduler_monitors_every_worker(
    processes: Processes, tmp_path: Path, how: str
) -> None:
    file = tmp_path / "scheduler.json"
    args = ["distributed.cli.dask_scheduler", "--scheduler-file", str(file), "--port", "0"]
    args += ["--dashboard-address", ":0"]
    log = tmp_path / "scheduler.log"
    if how == "flag":
        processes.start(*args, "--preload", "roastcoffea", log=log)
    else:
        preload = {"DASK_DISTRIBUTED__SCHEDULER__PRELOAD": '["roastcoffea"]'}
        processes.start(*args, env=preload, log=log)
    address = scheduler_address(file)
    worker = ["distributed.cli.dask_worker", address, "--nthreads", "1", "--no-dashboard"]
    processes.start(*worker, "--nworkers", "2", "--name", "pair")
    with Client(address) as client:
        first = workers_of(client, 2)
        has_plugin = client.run_on_scheduler(
            lambda dask_scheduler: PLUGIN_NAME in dask_scheduler.plugins
        )
        assert has_plugin
        with MetricsCollector(client, live=False) as mc:
            assert client.gather(client.map(operator.add, range(10), range(10))) == [
                2 * i for i in range(10)
            ]
            late = processes.start(*worker, "--name", "late")
            joined = workers_of(client, 3)
            (late_address,) = set(joined) - set(first)
            on_late = client.map(operator.mul, range(6), range(6), workers=[late_address])
            assert client.gather(on_late) == [i * i for i in range(6)]
            late.send_signal(signal.SIGINT)  # an orderly shutdown: the worker leaves
            workers_of(client, 2)
        assert mc.collector_errors == []
        assert not any("registered" in note for note in mc.notes), mc.notes  # the preload's
        tasks = {row["worker"]: row["tasks"] for row in mc.snapshot["tasks"] if row["span"]}
        assert sum(tasks.values()) == 16 and tasks[late_address] == 6
        # The late worker left right after its tasks, before any heartbeat of its own: its
        # digests came with the full state it sends as it closes.
        digest_workers = {key[0] for key in mc.snapshot["digests"] if key[2] in mc.run.span_ids}
        assert late_address in digest_workers and digest_workers <= set(joined)
        departed = [w["address"] for w in mc.run.departures.retired + mc.run.departures.lost]
        assert departed == [late_address]
        # The preloaded plugin shows its page on the scheduler's dashboard, for every client.
        page = client.dashboard_link.rsplit("/", 1)[0] + "/roastcoffea"
        with urllib.request.urlopen(page + "/data.json", timeout=30) as response:
            data = json.load(response)
        assert set(data["workers"]) == set(first)
    # The scheduler's log gives the page's address, and the plugin pair was installed once
    # (the plugin started once: the scheduler starts the plugins its preloads add).
    text = log.read_text()
    assert f"roastcoffea: RoastPlugin added by preload; its page: {page}\n" in text, text
    assert text.count(f"Registering Worker plugin {PLUGIN_NAME}\n") == 1, text


#: Two analysts' runs: (processor class, datasets, chunks, events) each; chunks of 10 events.
RUNS = {
    "one": ("dy=nano_dy.root+nano_dimuon.root", 8, 80),
    "two": ("ttbar=nanoAOD_2015_CMS_Open_Data_ttbar.root", 20, 200),
}


@pytest.mark.parametrize(
    "classes", [("MyProcessor", "MyProcessor"), ("DYProcessor", "TTProcessor")]
)
def test_two_clients_at_once_each_count_their_own_run(
    processes: Processes, tmp_path: Path, classes: tuple[str, str]
) -> None:
    """Two client processes on a CLI cluster, started together: with one processor class
    Dask puts every task of both runs in the first run's span (one task group per class);
    each collector still counts exactly its own chunks, phases and tasks."""
    file = tmp_path / "scheduler.json"
    processes.start(
        *("distributed.cli.dask_scheduler", "--scheduler-file", str(file), "--port", "0"),
        *("--dashboard-address", ":0", "--preload", "roastcoffea"),
    )
    address = scheduler_address(file)
    processes.start("distributed.cli.dask_worker", address, "--nthreads", "1", "--nworkers", "2")
    with Client(address) as client:
        workers_of(client, 2)
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    script = Path(__file__).resolve().parent / "shared_cluster_run.py"
    outs = {name: tmp_path / f"{name}.json" for name in RUNS}
    clients = [
        subprocess.Popen(
            [
                sys.executable,
                str(script),
                address,
                cls,
                RUNS[name][0],
                str(barrier),
                str(outs[name]),
            ],
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, cls in zip(RUNS, classes, strict=True)
    ]
    for process in clients:
        _, err = process.communicate(timeout=300)
        assert process.returncode == 0, err[-3000:]
    results = {name: json.loads(path.read_text()) for name, path in outs.items()}
    assert results["one"]["span_id"] != results["two"]["span_id"]
    for name, (spec, chunks, events) in RUNS.items():
        run, metrics = results[name], results[name]["metrics"]
        assert run["collector_errors"] == []
        assert run["report"]["chunks"] == chunks and run["report"]["entries"] == events
        datasets = {part.split("=")[0] for part in spec.split(",")}
        assert {c["dataset"] for c in run["chunks"]} == datasets == set(metrics["per_dataset"])
        assert metrics["num_chunks"] == chunks == len(run["chunks"])
        assert sum(c["num_events"] for c in run["chunks"]) == metrics["total_events"] == events
        assert metrics["phase_tasks"] == chunks
        (prefix,) = metrics["processor_prefixes"]
        assert metrics["per_prefix"][prefix]["tasks"] == chunks
        # Dask's own span totals of the run hold its phase digests, no other run's
        assert run["dask_span_counts"][f"{prefix}:phase-tasks"] == chunks
        # coffea's preprocessing and reduction tasks count for the run that submitted them
        assert metrics["per_prefix"]["reduce"]["tasks"] >= 1


def slow_state_handler(dask_worker: Any, seconds: float) -> None:
    """Make the worker answer the flush's state request ``seconds`` late."""
    handler = dask_worker.handlers["roastcoffea_worker_state"]

    async def slowly() -> bytes:
        await asyncio.sleep(seconds)
        return handler()

    dask_worker.handlers["roastcoffea_worker_state"] = slowly


def test_an_exit_whose_scheduler_is_killed_during_the_flush_is_bounded(
    processes: Processes, tmp_path: Path
) -> None:
    file = tmp_path / "scheduler.json"
    scheduler = processes.start(
        *("distributed.cli.dask_scheduler", "--scheduler-file", str(file), "--port", "0"),
        *("--dashboard-address", ":0", "--preload", "roastcoffea"),
    )
    address = scheduler_address(file)
    processes.start("distributed.cli.dask_worker", address, "--nthreads", "1", "--no-dashboard")
    probe, flush = 2.0, 4.0
    client = Client(address)
    try:
        workers_of(client, 1)
        client.run(slow_state_handler, seconds=3.0)  # the flush is under way for 3 s
        settings = {"roastcoffea.probe-timeout": probe, "roastcoffea.flush-timeout": flush}
        with dask.config.set(settings), MetricsCollector(client, live=False) as mc:
            assert client.submit(sum, [1, 2]).result() == 3
            threading.Timer(1.0, scheduler.kill).start()  # SIGKILL, 1 s into the exit
        # Dask's client would wait 30 s to reconnect for each call; the exit's own
        # clock stays within the two timeouts, plus the decoding it still does.
        assert mc.exit_seconds < probe + flush + 2.0
        assert any("no snapshot of the block" in e for e in mc.collector_errors)
    finally:
        client.close(timeout=2)
