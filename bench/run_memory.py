"""What a long-lived scheduler keeps per run: its memory over 1,000 runs, with the plugin and bare.

What it measures: two schedulers, each in a process of its own with one worker process, one
with ``RoastPlugin`` registered and one bare. The same small run goes to both in turn,
``--runs`` times after ``--warmup`` runs: eight ``processor-*`` tasks in a
``coffea-processing`` span, inside a ``MetricsCollector`` on the monitored scheduler. Every
``--every`` runs each scheduler reports, from inside its own process, the Python heap
(``tracemalloc``, started when the scheduler started) and glibc's bytes in use
(``mallinfo2``: the native aggregator's tables, and Python's larger blocks). Printed: the
growth per run after warm-up (least squares over the checkpoints) of both, their
difference, and the rows the aggregator holds. Nothing is asserted.

Run: ``.venv/bin/python bench/run_memory.py`` (about 15 minutes; ``--quick``: 200 runs).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from typing import Any

from common import machine, table
from distributed import Client, span

from roastcoffea import MetricsCollector, RoastPlugin

#: A process that starts a scheduler (Python heap traced from the start) and one worker.
CLUSTER = """
import sys, time, tracemalloc
tracemalloc.start()
from distributed import LocalCluster
cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                       dashboard_address=None, scheduler_port=0)
print(cluster.scheduler_address, flush=True)
sys.stdin.read()
cluster.close()
"""


def heap(dask_scheduler: Any) -> dict[str, Any]:
    """Inside the scheduler's process: its Python heap, malloc in use, the plugin's rows."""
    import ctypes
    import tracemalloc

    class Mallinfo2(ctypes.Structure):  # defined here: the function travels by value
        _fields_ = [
            (name, ctypes.c_size_t)
            for name in (
                "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                "fsmblks", "uordblks", "fordblks", "keepcost",
            )
        ]  # fmt: skip

    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = Mallinfo2
    info = libc.mallinfo2()
    out: dict[str, Any] = {
        "python": tracemalloc.get_traced_memory()[0],
        "malloc": info.uordblks + info.hblkhd,
    }
    plugin = dask_scheduler.plugins.get("roastcoffea")
    if plugin is not None:
        state = plugin.aggregator.to_dict()
        out["rows"] = {k: len(state[k]) for k in ("tasks", "digests", "spans", "records")}
    return out


def inc(x: int) -> int:
    return x + 1


def one_run(client: Client, i: int) -> None:
    with span("coffea-processing"):
        client.gather(client.map(inc, range(8), key=[f"processor-{i}-{k}" for k in range(8)]))


def slope(points: list[tuple[int, float]]) -> float:
    """Least-squares growth per run of ``(run, bytes)`` points."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    return sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=1_000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--every", type=int, default=50)
    parser.add_argument("--quick", action="store_true", help="200 runs after 50")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.warmup, args.every = 200, 50, 25
    print(machine())
    print()
    kinds = ("bare", "monitored")
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "text": True}
    procs = {kind: subprocess.Popen([sys.executable, "-c", CLUSTER], **pipes) for kind in kinds}
    clients = {kind: Client(procs[kind].stdout.readline().strip()) for kind in kinds}
    clients["monitored"].register_plugin(RoastPlugin())
    points: dict[str, dict[str, list[tuple[int, float]]]] = {
        kind: {"python": [], "malloc": []} for kind in kinds
    }
    last: dict[str, Any] = {}
    try:
        for i in range(args.warmup + args.runs):
            one_run(clients["bare"], i)
            with MetricsCollector(clients["monitored"], live=False):
                one_run(clients["monitored"], i)
            done = i + 1 - args.warmup
            if done >= 0 and done % args.every == 0:
                for kind in kinds:
                    last[kind] = clients[kind].run_on_scheduler(heap)
                    for measure in ("python", "malloc"):
                        points[kind][measure].append((done, last[kind][measure]))
    finally:
        for kind in kinds:
            clients[kind].close()
            procs[kind].communicate("", timeout=60)
    rows = []
    for measure, label in (("python", "Python heap"), ("malloc", "malloc in use")):
        bare, ours = (slope(points[kind][measure]) for kind in kinds)
        rows.append([label, f"{bare:,.0f}", f"{ours:,.0f}", f"{ours - bare:+,.0f}"])
    print(f"{args.runs:,} runs after {args.warmup:,}; bytes per run, least squares")
    print(table(["scheduler", "bare B/run", "monitored B/run", "difference B/run"], rows))
    print(f"\naggregator rows after the last run: {last['monitored'].get('rows')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
