"""Wall-time overhead of the plugin pair on a scheduler-bound workload.

What it measures: 20,000 trivial tasks (`client.map(inc, range(n), pure=False)`, then
`client.gather`) on `LocalCluster(n_workers=2, threads_per_worker=1, processes=True)`,
with and without roastcoffea's plugin pair. The workload is nothing but per-task
overhead (~6 scheduler transitions, messages, worker bookkeeping per task), the worst
case for per-task hooks. Two walls per run:
map -> gather (what the user waits for) and map -> forgotten (until the scheduler has
released and forgotten every task, so all 6 transitions per task are inside).

How (an honest A/B on a shared 2-core machine): one cluster, created once, and the
plugin toggled between runs: "with" = `client.register_plugin(RoastPlugin())`, which
also installs `RoastWorkerPlugin` on the workers and starts the sampler; "without" =
`roastcoffea.plugin.stop(client)`, which stops the sampler, removes the handlers, the
worker plugin and the scheduler plugin itself, so nothing of roastcoffea is left on the
scheduler (checked after every toggle: not in `scheduler.plugins`) or on the workers
(checked: no `worker.metrics["roastcoffea"]`). One cluster, rather than two clusters
side by side, keeps the same processes, memory and scheduler state for both arms, and no
idle second cluster competes for the two cores. Runs alternate in
ABBA order (with, without, without, with, ...), after one unrecorded warm-up run of each
arm; before each run the scheduler is idle (no tasks) and the client has collected
garbage. After each "with" run, outside the timing, a snapshot checks that the plugin
counted every task. Each run also records the CPU seconds of the process hosting the
scheduler (and the client: LocalCluster runs the scheduler in this process) and of the
workers, read with `os.times()` before and after the run, to show where any overhead
goes. Finally one more "with" run is profiled (cProfile on the event-loop threads of the
scheduler and of the workers), and the share of the profiled time spent in
roastcoffea's own functions is printed: a direct measure of the plugin's work that other
jobs on the machine do not blur (the CPython call into the hook is charged to Dask's
caller, see bench/scheduler_hook.py for that part). Ratios are with/without per adjacent
pair, summarized by median and interquartile range. Target: ratio <= 1.03. Nothing is
asserted; the script prints figures.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import pstats
import sys
import time

from common import cpu_seconds, iqr, machine, median, quiet_cluster, spread, table, verdict
from distributed import Client

from roastcoffea.plugin import RoastPlugin, snapshot, stop


def inc(x: int) -> int:
    return x + 1


async def _wait_forgotten(dask_scheduler) -> None:
    while dask_scheduler.tasks:
        await asyncio.sleep(0.002)


def _scheduler_plugins(dask_scheduler) -> list[str]:
    return list(dask_scheduler.plugins)


def _has_roast_metrics(dask_worker) -> bool:
    return "roastcoffea" in dask_worker.metrics


def _profile_start(dask_scheduler=None, dask_worker=None) -> None:
    server = dask_scheduler if dask_scheduler is not None else dask_worker
    server._roast_bench_profile = cProfile.Profile()
    server._roast_bench_profile.enable()


def _profile_stop(dask_scheduler=None, dask_worker=None) -> tuple[float, float, int]:
    """(seconds in roastcoffea's own functions, profiled seconds, hook calls) in this thread."""
    server = dask_scheduler if dask_scheduler is not None else dask_worker
    profile = server._roast_bench_profile
    profile.disable()
    del server._roast_bench_profile
    ours = total = 0.0
    hook_calls = 0
    for (file, _line, name), (_cc, calls, tottime, _ct, _callers) in pstats.Stats(
        profile
    ).stats.items():
        total += tottime
        if "roastcoffea" in file or "roastcoffea" in name:
            ours += tottime
            hook_calls += calls if "transition" in name else 0
    return ours, total, hook_calls


def profile_share(client: Client, n: int) -> tuple[tuple[float, float, int], list]:
    """One run with the plugin on and cProfile on the event-loop threads of the scheduler
    and of every worker: roastcoffea's share of the profiled time on each."""
    client.run_on_scheduler(_wait_forgotten)
    client.run_on_scheduler(_profile_start)
    client.run(_profile_start)
    futures = client.map(inc, range(n), pure=False)
    client.gather(futures)
    del futures
    client.run_on_scheduler(_wait_forgotten)
    workers = list(client.run(_profile_stop).values())
    return client.run_on_scheduler(_profile_stop), workers


class Toggle:
    """Puts the plugin pair on or off the cluster, and checks that it did."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.on = False
        self.counted = 0  # tasks of prefix "inc" in the plugin since it was registered

    def set(self, on: bool) -> None:
        if on == self.on:
            return
        if on:
            self.client.register_plugin(RoastPlugin())
            self.counted = 0
        else:
            reply = stop(self.client)
            if reply["errors"]:
                raise RuntimeError(f"roastcoffea stop reported errors: {reply['errors']}")
        self.on = on
        installed = RoastPlugin.name in self.client.run_on_scheduler(_scheduler_plugins)
        on_workers = set(self.client.run(_has_roast_metrics).values())
        if installed != on or on_workers != {on}:
            raise RuntimeError(
                f"plugin toggle failed: wanted on={on}, scheduler has it: {installed}, "
                f"workers have it: {sorted(on_workers)}"
            )

    def tasks_counted(self) -> int:
        """New 'inc' tasks the plugin counted since the last call (a flushed snapshot)."""
        total = snapshot(self.client)["prefixes"].get("inc", {}).get("tasks", 0)
        new, self.counted = total - self.counted, total
        return new


def run(client: Client, n: int) -> tuple[float, float, float, float]:
    """One timed run: (map -> gather s, map -> forgotten s, CPU s of the process hosting
    the scheduler and the client, CPU s of the workers summed)."""
    client.run_on_scheduler(_wait_forgotten)
    workers0 = sum(client.run(cpu_seconds).values())
    gc.collect()
    cpu0 = cpu_seconds()
    t0 = time.perf_counter()
    futures = client.map(inc, range(n), pure=False)
    client.gather(futures)
    t1 = time.perf_counter()
    del futures
    client.run_on_scheduler(_wait_forgotten)
    t2 = time.perf_counter()
    cpu = cpu_seconds() - cpu0
    workers = sum(client.run(cpu_seconds).values()) - workers0
    return t1 - t0, t2 - t0, cpu, workers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 runs per arm of 5,000 tasks")
    parser.add_argument("--tasks", type=int, default=None, help="tasks per run (20,000)")
    parser.add_argument("--runs", type=int, default=None, help="runs per arm (5)")
    parser.add_argument("--settle", type=float, default=1.0, help="idle seconds before a run")
    args = parser.parse_args(argv)
    n = args.tasks or (5000 if args.quick else 20_000)
    runs = args.runs or (2 if args.quick else 5)

    walls: dict[bool, list[tuple[float, float, float, float]]] = {True: [], False: []}
    counted_ok = 0
    with quiet_cluster() as client:
        toggle = Toggle(client)
        order = [True, False]
        for i in range(runs):
            order += [False, True] if i % 2 == 0 else [True, False]
        for k, on in enumerate(order):
            toggle.set(on)
            time.sleep(args.settle)
            wall = run(client, n)
            counted = toggle.tasks_counted() if on else None
            label = "warm-up" if k < 2 else f"run {k - 1}/{2 * runs}"
            print(
                f"  {label}: {'with' if on else 'without'} plugin, {wall[1]:.2f} s", file=sys.stderr
            )
            if k < 2:
                continue  # warm-up
            walls[on].append(wall)
            counted_ok += counted == n
        toggle.set(True)
        profiled = profile_share(client, n)
        toggle.set(False)

    # Ratios per adjacent pair of the ABBA order (one run of each arm per pair).
    pairs = list(zip(walls[True], walls[False], strict=True))
    ratio_gather = [w[0] / wo[0] for w, wo in pairs]
    ratio_cycle = [w[1] / wo[1] for w, wo in pairs]

    print(f"scheduler_overhead: {runs} runs per arm of {n:,} tasks, ABBA order, after warm-up")
    print("  one LocalCluster(n_workers=2, threads_per_worker=1, processes=True), plugin toggled")
    print(f"  {machine()}")
    print()
    rows = []
    for on, label in ((False, "without plugin"), (True, "with RoastPlugin")):
        gather, cycle, cpu, workers = ([w[i] for w in walls[on]] for i in range(4))
        rows.append(
            [
                label,
                f"{median(gather):.2f}",
                iqr(gather, 2),
                f"{median(cycle):.2f}",
                iqr(cycle, 2),
                f"{1e6 * median(cpu) / n:.0f}",
                f"{1e6 * median(workers) / n:.0f}",
            ]
        )
    headers = [
        "arm",
        "map->gather s",
        "IQR",
        "map->forgotten s",
        "IQR",
        "sched+client CPU us/task",
        "workers CPU us/task",
    ]
    print(table(headers, rows))
    print()

    def paired(i: int) -> list[float]:
        return [w[i] / wo[i] for w, wo in pairs]

    rows = [
        [
            "map -> forgotten (wall)",
            f"{median(ratio_cycle):.3f}",
            iqr(ratio_cycle, 3),
            "<= 1.03",
            verdict(median(ratio_cycle) <= 1.03),
        ],
        ["map -> gather (wall)", *spread(ratio_gather, 3), "", ""],
        ["scheduler+client CPU", *spread(paired(2), 3), "", ""],
        ["workers CPU", *spread(paired(3), 3), "", ""],
    ]
    print(table(["with / without, paired", "median", "IQR", "target", ""], rows))
    print()
    print(f"plugin counted every task in {counted_ok} of {runs} 'with' runs")
    (ours, total, hooks), workers = profiled
    worker_ours = sum(w[0] for w in workers)
    worker_total = sum(w[1] for w in workers)
    print(
        f"one more 'with' run under cProfile: roastcoffea's own functions took "
        f"{100 * ours / total:.2f}% of the scheduler thread's profiled time "
        f"({hooks:,} transition hook calls) and {100 * worker_ours / worker_total:.2f}% "
        "of the workers' event-loop threads (cProfile inflates every call alike)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
