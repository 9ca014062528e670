"""A facility deployment: ``dask scheduler --preload roastcoffea`` and ``dask worker`` processes.

Everything is started from the command line, as an operator would: the scheduler with the
preload (or the same through Dask's configuration), two workers from one ``dask worker
--nworkers 2``, a third that joins while a collector runs, and one that is shut down before
the collector ends. The collector finds the plugin pair the preload installed.
"""

from __future__ import annotations

import operator
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from distributed import Client
from roast_testing import wait_for

from roastcoffea import MetricsCollector
from roastcoffea.plugin._workers import PLUGIN_NAME

pytestmark = pytest.mark.cluster

DASK = [sys.executable, "-m", "distributed.cli"]


class Processes:
    """Command-line processes, stopped (and waited for) at the end."""

    def __init__(self) -> None:
        self.started: list[subprocess.Popen] = []

    def start(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        process = subprocess.Popen(
            [sys.executable, "-m", *args],
            env={**os.environ, **(env or {})},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
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
    if how == "flag":
        processes.start(*args, "--preload", "roastcoffea")
    else:
        processes.start(*args, env={"DASK_DISTRIBUTED__SCHEDULER__PRELOAD": '["roastcoffea"]'})
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
        digest_workers = {key[0] for key in mc.snapshot["digests"] if key[2] in mc.span_ids}
        assert late_address in digest_workers and digest_workers <= set(joined)
        departed = [w["address"] for w in mc.retired_workers + mc.lost_workers]
        assert departed == [late_address]
