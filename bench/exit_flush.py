"""Latency from the last result at the client to a complete snapshot in hand.

What it measures: `t0 = time.perf_counter()` right after `client.gather(...)` returns,
then `roastcoffea.plugin.snapshot(client, span_id=..., flush=True)`; the figure is the
time until the decoded snapshot is returned. It covers the flush (every worker's full
state fetched and applied, the ring drained) and the snapshot of that span.

How: a `LocalCluster(n_workers=N, threads_per_worker=1, processes=True)` with
`RoastPlugin` registered, for each N of `--workers` (default 2; `--workers 2 4 8 16`
gives the flush as a function of real worker processes, up to what the machine holds).
Each round opens a `distributed.span`, maps 200 trivial tasks in it, gathers them, and
takes the snapshot. Each task also records one custom fine performance metric
(`context_meter.digest_metric("bench-task", 1, "count")`), which only reaches the
scheduler through the worker side of the plugin, so a snapshot is
"complete" when both
  - the scheduler side counts every task: `span_tasks[span]["tasks"]` equals the tasks
    run in the span, and
  - the worker side has every task's digest: the "bench-task" counts summed over the
    snapshot's digests for that span equal the tasks run.
Before each round the scheduler has forgotten the previous round's tasks, since Dask
attributes a task to the span of its task group and a group still alive from the last
round would keep the old span. Rounds alternate (ABBA) with rounds taking the snapshot
with `flush=False` (same measurement, no flush), to show what the flush costs and what
it buys. Reported: median, p90, min and max over the rounds, and how many rounds were
complete. Target: median <= 50 ms with flush=True. Nothing is asserted; the script
prints figures.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from common import machine, median, quantile, quiet_cluster, table, verdict
from distributed import Client, span
from distributed.metrics import context_meter

from roastcoffea.plugin import RoastPlugin, snapshot

TASKS = 200


def inc(x: int) -> int:
    context_meter.digest_metric("bench-task", 1, "count")
    return x + 1


def completeness(snap: dict, span_id: str, tasks: int) -> tuple[bool, bool]:
    """(scheduler side complete, worker side complete) for the span's tasks."""
    counted = snap["span_tasks"].get(span_id, {}).get("tasks", 0)
    digested = sum(
        value
        for (_worker, context, sid, _prefix, activity, unit), value in snap["digests"].items()
        if context == "execute" and sid == span_id and activity == "bench-task" and unit == "count"
    )
    return counted == tasks, digested == tasks


async def _wait_forgotten(dask_scheduler) -> None:
    while dask_scheduler.tasks:
        await asyncio.sleep(0.002)


def one_round(client: Client, n: int, tag: str, flush: bool) -> tuple[float, bool, bool]:
    # Dask gives a span to a task group once: tasks joining a group that still exists
    # (the last round's `inc-...` tasks, not yet forgotten) would land in the old span.
    client.run_on_scheduler(_wait_forgotten)
    with span(tag) as span_id:
        futures = client.map(inc, range(n), pure=False)
    client.gather(futures)
    t0 = time.perf_counter()
    snap = snapshot(client, span_id=span_id, flush=flush)
    elapsed = time.perf_counter() - t0
    del futures
    return (elapsed, *completeness(snap, span_id, n))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="8 rounds of each kind")
    parser.add_argument("--rounds", type=int, default=None, help="rounds of each kind (30)")
    parser.add_argument("--tasks", type=int, default=TASKS, help="tasks per round (200)")
    parser.add_argument("--workers", type=int, nargs="+", default=[2], help="worker processes")
    args = parser.parse_args(argv)
    rounds = args.rounds or (8 if args.quick else 30)

    print(f"exit_flush: {rounds} rounds of each kind, {args.tasks} tasks per round, ABBA order")
    print("  LocalCluster(n_workers=N, threads_per_worker=1, processes=True)")
    print(f"  {machine()}")
    print()
    rows, flushed, complete = [], [], True
    for n_workers in args.workers:
        results: dict[bool, list[tuple[float, bool, bool]]] = {True: [], False: []}
        with quiet_cluster(n_workers) as client:
            client.register_plugin(RoastPlugin())
            one_round(client, args.tasks, "flush-warmup", True)
            for r in range(2 * rounds):
                flush = (r % 2 == 0) == (r // 2 % 2 == 0)  # ABBA: True, False, False, True, ...
                results[flush].append(one_round(client, args.tasks, f"flush-{r}", flush))
        rows += _rows(n_workers, results)
        flushed = [1e3 * r[0] for r in results[True]]
        complete = complete and all(r[1] and r[2] for r in results[True])
    headers = [
        "workers",
        "",
        "median ms",
        "p90 ms",
        "min ms",
        "max ms",
        "tasks complete",
        "digests complete",
    ]
    print(table(headers, rows))
    print()
    print(
        f"target median <= 50 ms with flush=True at {args.workers[-1]} workers: "
        f"{verdict(median(flushed) <= 50)} (median {median(flushed):.1f} ms); every flushed "
        f"snapshot complete: {'yes' if complete else 'NO'}"
    )
    return 0


def _rows(n_workers: int, results: dict[bool, list[tuple[float, bool, bool]]]) -> list[list]:
    rows = []
    for flush in (True, False):
        ms = [1e3 * r[0] for r in results[flush]]
        sched = sum(r[1] for r in results[flush])
        work = sum(r[2] for r in results[flush])
        rows.append(
            [
                str(n_workers),
                f"snapshot(flush={flush})",
                f"{median(ms):.1f}",
                f"{quantile(ms, 0.9):.1f}",
                f"{min(ms):.1f}",
                f"{max(ms):.1f}",
                f"{sched}/{len(ms)}",
                f"{work}/{len(ms)}",
            ]
        )
    return rows


if __name__ == "__main__":
    sys.exit(main())
