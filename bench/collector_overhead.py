"""Wall time of the demo workload with and without the MetricsCollector.

What it measures: the demo analysis (``roastcoffea.demo``: dijet + dimuon processor on
synthetic NanoAOD, by default the demo's 2,000,000 events in 8 files with chunks of
100,000 events; coffea ``Runner`` + ``DaskExecutor``) on a
``LocalCluster(n_workers=2, threads_per_worker=1, processes=True)``, in three variants:

- bare: the processor's undecorated ``process`` (``DemoProcessor.process.__wrapped__``,
  whose sections then do nothing), no roastcoffea plugin on the cluster (stopped
  before the run); timed around the ``Runner`` call;
- instrumented: ``DemoProcessor`` with ``@track_metrics`` and its sections, the plugin
  registered, no collector; timed around the ``Runner`` call. This is the cost of the
  chunk instrumentation and of the plugin;
- collected: as instrumented, inside ``MetricsCollector(client, live=False)`` with
  ``set_coffea_report`` in the block; timed from before ``__enter__`` to after
  ``__exit__`` (flush, snapshot and the metrics included).

The plugin is registered before the timer: registering is a once-per-cluster cost,
reported separately. After one warm-up run of each variant, every round runs the three
in a rotating order (the position in the round changes from round to round), for
``--rounds`` rounds. The figure is the median of the per-round ratios collected / bare
(target <= 1.02), with instrumented / bare and collected / instrumented beside it to
say where a cost comes from, and the median wall times with their interquartile ranges.
Beside the wall time, each run records the CPU seconds of the process hosting the
scheduler and the client, and of the workers (``os.times()`` read before and after the
run, outside the timer): they show where a cost lands, and they do not depend on how the
last chunks happened to fall on the two workers, which moves the wall time by up to one
chunk. Nothing is asserted; the script prints figures.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from coffea import processor
from coffea.nanoevents import NanoAODSchema
from common import cpu_seconds, data_dir, iqr, machine, median, spread, table, verdict
from distributed import Client, LocalCluster

from roastcoffea import MetricsCollector, RoastPlugin
from roastcoffea.demo.analysis import DATASET, DEFAULT_CHUNKSIZE, DemoProcessor
from roastcoffea.demo.nanoaod import DEFAULT_EVENTS, DEFAULT_FILES, TREE, ensure_files
from roastcoffea.plugin import stop

TARGET_RATIO = 1.02
VARIANTS = ("bare", "instrumented", "collected")


class BareProcessor(DemoProcessor):
    """The demo processor without ``@track_metrics`` (its sections then do nothing)."""

    process = DemoProcessor.process.__wrapped__  # type: ignore[attr-defined]


def has_plugin(dask_scheduler: Any) -> bool:
    return "roastcoffea" in dask_scheduler.plugins


def make_runner(client: Client, chunksize: int) -> processor.Runner:
    return processor.Runner(
        executor=processor.DaskExecutor(client=client, status=False),
        schema=NanoAODSchema,
        chunksize=chunksize,
        savemetrics=True,
    )


class Bench:
    """The three variants on one cluster, with what they measured."""

    def __init__(self, client: Client, fileset: dict[str, Any], chunksize: int) -> None:
        self.client = client
        self.fileset = fileset
        self.chunksize = chunksize
        self.registrations: list[float] = []
        self.exits: list[float] = []
        self.errors: list[str] = []

    def run(self, variant: str) -> tuple[float, float, float]:
        """One run: (wall s, CPU s of the process hosting the scheduler and the client,
        CPU s of the workers summed); the CPU readings are taken outside the wall timer."""
        if variant == "bare":
            if self.client.run_on_scheduler(has_plugin):
                stop(self.client)
        else:
            start = time.perf_counter()
            self.client.register_plugin(RoastPlugin())
            self.registrations.append(time.perf_counter() - start)
        runner = make_runner(self.client, self.chunksize)
        proc = BareProcessor() if variant == "bare" else DemoProcessor()
        workers0 = sum(self.client.run(cpu_seconds).values())
        cpu0 = cpu_seconds()
        start = time.perf_counter()
        if variant != "collected":
            runner(self.fileset, proc, treename=TREE)
        else:
            with MetricsCollector(self.client, live=False) as mc:
                _, report = runner(self.fileset, proc, treename=TREE)
                mc.set_coffea_report(report)
        wall = time.perf_counter() - start
        cpu = cpu_seconds() - cpu0
        workers = sum(self.client.run(cpu_seconds).values()) - workers0
        if variant == "collected":
            self.exits.append(mc.get_metrics()["monitoring"]["exit_seconds"])
            self.errors += mc.collector_errors
        return wall, cpu, workers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=DEFAULT_EVENTS, help="events in all files")
    parser.add_argument("--files", type=int, default=DEFAULT_FILES, help="number of files")
    parser.add_argument("--chunksize", type=int, default=DEFAULT_CHUNKSIZE, help="chunk size")
    parser.add_argument("--rounds", type=int, default=6, help="rounds (one run of each variant)")
    parser.add_argument("--data-dir", type=Path, default=None, help="cache of the input files")
    parser.add_argument("--quick", action="store_true", help="400k events in 4 files, 5 rounds")
    args = parser.parse_args(argv)
    if args.quick:
        args.events, args.files, args.chunksize, args.rounds = 400_000, 4, 50_000, 5
    files = ensure_files(
        args.data_dir or data_dir(args.events, args.files), args.events, args.files
    )
    fileset = {DATASET: {"files": {str(p): TREE for p in files}}}
    print(
        f"collector overhead: {args.events:,} events in {args.files} files, "
        f"chunksize {args.chunksize:,}, {args.rounds} rounds; {machine()}"
    )

    # per variant, per round: wall s, scheduler+client CPU s, workers CPU s
    samples: dict[str, list[tuple[float, float, float]]] = {v: [] for v in VARIANTS}
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        bench = Bench(client, fileset, args.chunksize)
        for variant in VARIANTS:  # warm-up: imports, page cache
            bench.run(variant)
        for i in range(args.rounds):
            order = VARIANTS[i % 3 :] + VARIANTS[: i % 3]
            if i % 6 >= 3:
                order = order[::-1]
            times = {variant: bench.run(variant) for variant in order}
            for variant, sample in times.items():
                samples[variant].append(sample)
            print(
                f"  round {i} ({', '.join(order)}): "
                + ", ".join(f"{v} {times[v][0]:.2f} s" for v in VARIANTS)
                + f"; collected / bare {times['collected'][0] / times['bare'][0]:.3f}",
                flush=True,
            )

    def column(variant: str, k: int) -> list[float]:
        return [sample[k] for sample in samples[variant]]

    def paired(num: str, den: str, k: int) -> list[float]:
        return [a / b for a, b in zip(column(num, k), column(den, k), strict=True)]

    print()
    print(
        table(
            ["variant", "median wall s", "IQR s", "sched+client CPU s", "workers CPU s"],
            [
                [
                    v,
                    f"{median(column(v, 0)):.2f}",
                    iqr(column(v, 0), 2),
                    f"{median(column(v, 1)):.2f}",
                    f"{median(column(v, 2)):.2f}",
                ]
                for v in VARIANTS
            ],
        )
    )
    print()
    rows = []
    pairs = (("collected", "bare"), ("instrumented", "bare"), ("collected", "instrumented"))
    for num, den in pairs:
        row = [f"{num} / {den}"]
        for k in range(3):
            values = paired(num, den, k)
            row += spread(values, 3)
        rows.append(row)
    headers = ["paired per round", "wall", "IQR", "sched+client CPU", "IQR", "workers CPU", "IQR"]
    print(table(headers, rows))
    ratio = median(paired("collected", "bare", 0))
    print()
    print(
        f"median per-round wall ratio collected / bare: {ratio:.3f}, target <= {TARGET_RATIO}: "
        f"{verdict(ratio <= TARGET_RATIO)}"
    )
    print(
        f"collector __exit__ (its own clock): median {median(bench.exits) * 1e3:.1f} ms; "
        f"plugin registration (once per cluster, not in the ratios): "
        f"median {median(bench.registrations) * 1e3:.1f} ms"
    )
    if bench.errors:
        print(f"collector errors: {bench.errors}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
