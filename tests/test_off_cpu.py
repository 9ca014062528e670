"""The off-CPU split against the thread's own schedstat, read by the processor itself.

A worker process and two CPU-burning processes are pinned to one core, so the worker's
thread certainly waits for it; every chunk also sleeps, so it is certainly blocked. The
processor reads its thread's run-queue delay (``/proc/thread-self/schedstat``) at the start
and end of ``process()``: the phase clock reads it around the whole task, so its total
lies between the processor's own delay and that plus the task's time outside ``process()``.
Time asleep is blocked, never waiting for a CPU.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cloudpickle
import pytest
from coffea import processor
from coffea_run import TREE, collected_run
from conftest import local_cluster
from distributed import Client

import roastcoffea.phase_vocabulary as vocab
from roastcoffea import RoastPlugin, load_measurement
from roastcoffea.demo.nanoaod import generate
from roastcoffea.metrics import compute_metrics

cloudpickle.register_pickle_by_value(sys.modules[__name__])
pytestmark = pytest.mark.cluster

SLEEP = 0.05  # seconds asleep per chunk
SPIN = 0.05  # thread CPU seconds per chunk


def run_queue_delay() -> float:
    """The calling thread's run-queue delay so far, in seconds."""
    with open("/proc/thread-self/schedstat") as f:
        return int(f.read().split()[1]) * 1e-9


class Waiter(processor.ProcessorABC):
    def process(self, events: Any) -> dict[str, Any]:
        start, wall = run_queue_delay(), time.perf_counter()
        time.sleep(SLEEP)
        spun = time.thread_time()
        while time.thread_time() - spun < SPIN:
            pass
        return {
            "delay": run_queue_delay() - start,
            "wall": time.perf_counter() - wall,
            "chunks": 1,
        }

    def postprocess(self, accumulator: Any) -> Any:
        return accumulator


def pin_to_first_core() -> None:
    """Every thread of the calling process on one core."""
    core = min(os.sched_getaffinity(0))
    for tid in os.listdir("/proc/self/task"):
        os.sched_setaffinity(int(tid), {core})


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    files = generate(tmp_path_factory.mktemp("off_cpu"), 20_000, 1, compression="lz4:1")
    fileset = {"waiting": {"files": {str(p): TREE for p in files}}}
    core = min(os.sched_getaffinity(0))
    with local_cluster(n_workers=1) as cluster, Client(cluster) as client:
        client.register_plugin(RoastPlugin())
        client.run(pin_to_first_core)
        burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in "12"]
        try:
            for burner in burners:
                os.sched_setaffinity(burner.pid, {core})
            yield collected_run(client, fileset, Waiter(), 4_000)
        finally:
            for burner in burners:
                burner.kill()


def test_the_wait_for_a_cpu_is_the_threads_own_run_queue_delay(run: Any) -> None:
    m, out = run.mc.get_metrics(), run.output
    assert out["chunks"] == 5 == m["cpu_wait_tasks"]
    assert out["delay"] > 0.0  # pinned beside two burners, the thread waited
    outside = sum(m["phase_wall_seconds"].values()) - out["wall"]
    assert out["delay"] - 1e-6 <= m["cpu_wait_seconds"] <= out["delay"] + outside + 1e-6
    assert sum(m["cpu_wait_per_worker"].values()) == pytest.approx(m["cpu_wait_seconds"])


def test_time_asleep_is_blocked(run: Any) -> None:
    m = run.mc.get_metrics()
    assert m["blocked_seconds"] >= 5 * SLEEP
    assert m["blocked_seconds"] >= m["phase_blocked_seconds"]["user"]


def test_each_phase_waits_at_most_its_time_off_cpu(run: Any) -> None:
    m = run.mc.get_metrics()
    for phase, wait in m["phase_cpu_wait_seconds"].items():
        off = m["phase_wall_seconds"][phase] - m["phase_cpu_seconds"][phase]
        assert wait <= max(off, 0.0) + 1e-9, phase
        assert wait + m["phase_blocked_seconds"][phase] == pytest.approx(max(off, 0.0)), phase
    percent = 100 * m["cpu_wait_seconds"] / sum(m["phase_wall_seconds"].values())
    assert m["cpu_wait_percent"] == pytest.approx(percent)


def test_without_the_kernels_delay_each_figure_says_why(run: Any) -> None:
    # The digests as a kernel without schedstat leaves them: no cpu-wait rows.
    mc = run.mc
    inputs = mc.run.inputs(mc.coffea_report, None, mc.chunk_metrics, None, True)
    digests = {
        (w, c, s, p, activity, unit): v
        for (w, c, s, p, activity, unit), v in inputs.snapshot["digests"].items()
        if unit != vocab.CPU_WAIT and activity != vocab.CPU_WAIT_TASKS_ACTIVITY
    }
    snapshot = {**inputs.snapshot, "digests": digests}
    m = compute_metrics(dataclasses.replace(inputs, snapshot=snapshot))
    for key in ("cpu_wait_seconds", "phase_blocked_seconds", "cpu_wait_per_worker"):
        assert m[key] is None
        assert "keeps no run-queue delay" in m["unavailable"][key]
    assert m["phase_wall_seconds"] == mc.get_metrics()["phase_wall_seconds"]


def test_a_saved_measurement_keeps_the_split(run: Any, tmp_path: Path) -> None:
    run.mc.save_measurement(tmp_path, "off_cpu")
    loaded, _, _ = load_measurement(tmp_path / "off_cpu")
    m = run.mc.get_metrics()
    for key in ("cpu_wait_seconds", "phase_cpu_wait_seconds", "phase_blocked_seconds"):
        assert loaded[key] == m[key]
