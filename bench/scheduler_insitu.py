"""The plugin's CPU per task, measured where it is paid: in a real scheduler and real workers.

What it measures: a ``dask scheduler --preload roastcoffea`` process and a ``dask worker
--nworkers 2 --nthreads 1`` (real command-line processes, as a facility runs them) run
rounds of trivial tasks (``client.map(inc, ...)``, gathered, then forgotten). Per round:

- the scheduler process's CPU (psutil, user + system) per task, and the plugin's share
  of it: the C hook's own timer per transition kind (``Aggregator.hook_profile()``: one
  call in 64 timed, drawn at random) times the calls of that kind, the ring drains the
  hook made, and the sampler's ticks (``Sampler.cpu_seconds``, thread CPU). Not in it:
  CPython's call into the hook, which Dask's loop pays per plugin (the call floor of
  scheduler_hook.py, "The transition hook" in docs/performance.md), shown on its own line;
- the worker processes' CPU per task, and the worker plugin's share: its ``transition``
  hook and its heartbeat payload, timed around each call on every worker (a wrapper
  installed for the benchmark; its own cost is outside the timed interval).

The shares are means over the rounds with a 95 % confidence interval (Student's t), so a
claim of "below 1 %" is read off the interval, not off one noisy run. Targets:
plugin <= 1 % of the scheduler's CPU per task and <= 1 % of the workers'. Nothing is
asserted.

Run: ``.venv/bin/python bench/scheduler_insitu.py`` (about two minutes).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
from common import interval, machine, table, verdict
from distributed import Client

#: Seconds a round waits for the scheduler to forget its tasks.
FORGET_TIMEOUT = 60.0


def inc(x: int) -> int:
    return x + 1


def plugin_scheduler_state(dask_scheduler: Any) -> dict[str, Any]:
    """Run on the scheduler: the hook's profile and the sampler's CPU, cumulative."""
    plugin = dask_scheduler.plugins["roastcoffea"]
    return {
        "profile": plugin.aggregator.hook_profile(),
        "sampler_cpu": plugin.sampler.cpu_seconds,
        "tasks": len(dask_scheduler.tasks),
    }


def time_worker_plugin(dask_worker: Any) -> None:
    """Run on each worker: time the worker plugin's hook and heartbeat payload."""
    plugin = dask_worker.plugins["roastcoffea"]
    if getattr(plugin, "bench_ns", None) is not None:
        return
    plugin.bench_ns = 0
    transition, payload = plugin.transition, plugin._payload
    clock = time.perf_counter_ns

    def timed_transition(*args: Any, **kwargs: Any) -> None:
        t0 = clock()
        transition(*args, **kwargs)
        plugin.bench_ns += clock() - t0

    def timed_payload(*args: Any, **kwargs: Any) -> bytes:
        t0 = clock()
        data = payload(*args, **kwargs)
        plugin.bench_ns += clock() - t0
        return data

    plugin.transition = timed_transition
    plugin._payload = dask_worker.metrics["roastcoffea"] = timed_payload


def worker_plugin_ns(dask_worker: Any) -> int:
    return dask_worker.plugins["roastcoffea"].bench_ns


def hook_ns(profile: dict[str, dict[str, Any]]) -> float:
    """Total nanoseconds the hook spent, estimated per kind from its timed calls."""
    return math.fsum(
        entry["calls"] * entry["ns_per_call"]
        for entry in profile.values()
        if entry["ns_per_call"] is not None
    )


def cpu_seconds(processes: list[psutil.Process]) -> float:
    total = 0.0
    for process in processes:
        times = process.cpu_times()
        total += times.user + times.system
    return total


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_" + args[0], *args[1:]],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--tasks", type=int, default=20_000, help="tasks per round")
    parser.add_argument("--quick", action="store_true", help="3 rounds of 5,000 tasks")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.tasks = 3, 5_000
    print(machine())
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "scheduler.json"
        scheduler = start(
            "scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--dashboard-address",
            ":0",
            "--scheduler-file",
            str(file),
            "--preload",
            "roastcoffea",
        )
        while not file.exists():
            time.sleep(0.1)
        worker = start(
            "worker",
            "--scheduler-file",
            str(file),
            "--nworkers",
            "2",
            "--nthreads",
            "1",
            "--no-dashboard",
        )
        try:
            return measure(file, scheduler, worker, args.rounds, args.tasks)
        finally:
            for process in (worker, scheduler):
                process.send_signal(signal.SIGINT)
                process.wait(timeout=60)


def measure(
    file: Path, scheduler: subprocess.Popen, worker: subprocess.Popen, rounds: int, tasks: int
) -> int:
    with Client(scheduler_file=str(file)) as client:
        client.wait_for_workers(2)
        client.run(time_worker_plugin)
        scheduler_proc = psutil.Process(scheduler.pid)
        worker_procs = [psutil.Process(pid) for pid in client.run(os.getpid).values()]
        assert len(worker_procs) == 2, worker_procs
        client.gather(client.map(inc, range(1000), pure=False))  # warm-up
        shares_s, shares_w, rows = [], [], []
        by_kind: dict[str, list[float]] = {}
        for r in range(rounds):
            before = client.run_on_scheduler(plugin_scheduler_state)
            ns_w0 = sum(client.run(worker_plugin_ns).values())
            cpu_s0, cpu_w0 = cpu_seconds([scheduler_proc]), cpu_seconds(worker_procs)
            futures = client.map(
                inc, range(tasks), pure=False, key=[f"inc-{r}-{i}" for i in range(tasks)]
            )
            client.gather(futures)
            del futures
            deadline = time.monotonic() + FORGET_TIMEOUT
            while (
                client.run_on_scheduler(plugin_scheduler_state)["tasks"]
                and time.monotonic() < deadline
            ):
                time.sleep(0.05)
            cpu_s, cpu_w = (
                cpu_seconds([scheduler_proc]) - cpu_s0,
                cpu_seconds(worker_procs) - cpu_w0,
            )
            after = client.run_on_scheduler(plugin_scheduler_state)
            ns_w = sum(client.run(worker_plugin_ns).values()) - ns_w0
            hook = hook_ns(after["profile"]) - hook_ns(before["profile"])
            sampler = after["sampler_cpu"] - before["sampler_cpu"]
            plugin_s = hook * 1e-9 + sampler
            shares_s.append(100 * plugin_s / cpu_s)
            shares_w.append(100 * ns_w * 1e-9 / cpu_w)
            for kind, entry in after["profile"].items():
                old = before["profile"].get(kind, {"calls": 0, "ns_per_call": None})
                calls = entry["calls"] - old["calls"]
                if calls and entry["ns_per_call"] is not None:
                    spent = entry["calls"] * entry["ns_per_call"] - old["calls"] * (
                        old["ns_per_call"] or 0
                    )
                    by_kind.setdefault(kind, []).append(spent / tasks)
            rows.append(
                [
                    str(r + 1),
                    f"{cpu_s / tasks * 1e6:.0f}",
                    f"{plugin_s / tasks * 1e6:.2f}",
                    f"{shares_s[-1]:.3f}",
                    f"{cpu_w / tasks * 1e6:.0f}",
                    f"{ns_w * 1e-3 / tasks:.2f}",
                    f"{shares_w[-1]:.3f}",
                ]
            )
    print(
        f"scheduler_insitu: {rounds} rounds of {tasks:,} trivial tasks; dask scheduler --preload "
        "roastcoffea, dask worker --nworkers 2 --nthreads 1"
    )
    print()
    print(
        table(
            [
                "round",
                "scheduler CPU us/task",
                "plugin us/task",
                "plugin %",
                "workers CPU us/task",
                "worker plugin us/task",
                "worker plugin %",
            ],
            rows,
        )
    )
    print()
    kinds = sorted(by_kind, key=lambda k: -statistics.fmean(by_kind[k]))
    print(
        table(
            ["scheduler hook, per task", "ns/task (mean over rounds)"],
            [[k, f"{statistics.fmean(by_kind[k]):.0f}"] for k in kinds],
        )
    )
    print()
    ms, lo_s, hi_s = interval(shares_s)
    mw, lo_w, hi_w = interval(shares_w)
    print(
        f"plugin share of the scheduler's CPU per task: {ms:.3f} % "
        f"(95 % CI {lo_s:.3f}-{hi_s:.3f}); target <= 1 % {verdict(hi_s <= 1.0)}"
    )
    print(
        f"worker plugin share of the workers' CPU per task: {mw:.3f} % "
        f"(95 % CI {lo_w:.3f}-{hi_w:.3f}); target <= 1 % {verdict(hi_w <= 1.0)}"
    )
    print(
        "not in the plugin's figure: CPython's call into the C hook "
        "(the call floor of scheduler_hook.py), 6 calls per task"
    )
    print(
        json.dumps({"scheduler_share_pct": [ms, lo_s, hi_s], "worker_share_pct": [mw, lo_w, hi_w]})
    )
    return 0


if __name__ == "__main__":
    os.environ.setdefault("DASK_DISTRIBUTED__LOGGING__DISTRIBUTED", "error")
    raise SystemExit(main())
