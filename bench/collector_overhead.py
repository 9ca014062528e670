"""What monitoring costs an analysis, side by side with the bare run, at small and large chunks.

What it measures: the ``Analysis`` processor of ``bench/workload.py`` (leading dijet mass and
good muons in two ``track_time`` sections) on the demo's synthetic NanoAOD, with coffea
``Runner`` + ``DaskExecutor`` on ``LocalCluster(n_workers=2, threads_per_worker=1,
processes=True)``, at two chunk sizes:

- 1,000-event chunks: 200,000 events in 2 files, 200 chunks per run;
- 100,000-event chunks: 2,000,000 events in 8 files read four times (four datasets of the
  same files), 96 chunks per run.

A run is long enough (about 10 s of the workers' time at either size) that what the
collector costs once per run (entering and leaving ``MetricsCollector``: a round trip to
the scheduler, the flush, the snapshot) weighs little against the chunks; it is timed apart
and reported as the run's fixed cost.

Two such clusters run side by side, as long-lived clusters: one with the roastcoffea plugin
registered, one without. Each round runs two variants, in alternating order:

- bare: the undecorated processor, on the cluster without the plugin;
- collected: ``@track_metrics`` on the cluster with the plugin, the run inside
  ``MetricsCollector(client)`` with ``set_coffea_report``; timed from before ``__enter__``
  to after ``__exit__`` (the two also timed alone).

The plugin stays registered across rounds, as on a facility's cluster (registering and
removing it every round would throw away the workers' specialised code in both variants).
Halfway, the clusters swap roles (the plugin removed from one and registered on the other,
then a warm-up run of each): each set of worker processes runs half the rounds of each
variant, so a speed of their own does not count as the plugin's. Only the measured
cluster's workers are read; the idle cluster's own background (its heartbeats, the plugin's
sampler) shares the machine with either variant.

Per round, paired: the wall-time ratio collected / bare, the ratio of the workers' CPU
seconds (``os.times()`` of each worker process, read outside the timer: every thread, the
event loop's included), and the cost per chunk, the workers' extra CPU over the chunks. The
figures are means over the rounds with their 95 % confidence intervals (Student's t).
Targets: collected / bare <= 1.02 at 1,000-event chunks and <= 1.005 at 100,000-event
chunks, on the wall and on the workers' CPU; <= 1 ms of workers' CPU per chunk.

Where a chunk's cost goes, from the collected runs' own figures (their metrics): the
instrumentation's thread CPU (measured in every chunk record), the phase clock (estimated
from its calls and their timed cost), and the rest of the measured cost per chunk (the worker
plugin's task-end work on the event loop, and what the two do not see).

roastcoffea 0.1.2 from PyPI runs the same rounds under ``--rc012-python`` (bare against its
decorator and collector, which also takes ``extract_metrics_from_output``); see
docs/performance.md for making that venv. Each version runs in its own Python process, ours
first. Nothing is asserted; the script prints figures.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from common import (
    answer_parent,
    child_arguments,
    data_dir,
    interval,
    machine,
    median,
    run_child,
    table,
    verdict,
)

RESULT = "COLLECTOR-OVERHEAD-RESULT "
#: chunk size -> (events, files, datasets) of the workload: each dataset reads all the
#: files; --quick shrinks it.
SIZES = {1_000: (200_000, 2, 1), 100_000: (2_000_000, 8, 4)}
QUICK_SIZES = {1_000: (20_000, 1, 1), 50_000: (400_000, 4, 1)}
#: chunk size -> the largest collected / bare ratio the target allows.
TARGETS = {1_000: 1.02, 100_000: 1.005}
TARGET_MS_PER_CHUNK = 1.0


# --- one version, in its own process -------------------------------------------------


def worker_cpu_seconds() -> float:
    import os

    times = os.times()
    return times.user + times.system


class Rounds:
    """The two variants on two clusters, under whichever roastcoffea is installed."""

    def __init__(
        self, bare: Any, collected: Any, files: list[str], chunksize: int, datasets: int
    ) -> None:
        import roastcoffea

        self.clients = {"bare": bare, "collected": collected}
        self.fileset = {
            f"synthetic-{i}": {"files": dict.fromkeys(files, "Events")} for i in range(datasets)
        }
        self.chunksize = chunksize
        self.plugin = getattr(roastcoffea, "RoastPlugin", None)  # ours only
        self.parts: list[dict[str, Any]] = []
        if self.plugin is not None:
            collected.register_plugin(self.plugin())

    def swap(self) -> None:
        """Move the plugin to the other cluster: the clusters swap roles."""
        bare, collected = self.clients["bare"], self.clients["collected"]
        if self.plugin is not None:
            from roastcoffea.plugin import stop

            stop(collected)
            bare.register_plugin(self.plugin())
        self.clients = {"bare": collected, "collected": bare}

    def warm_up(self) -> None:
        """A run of each variant, not measured: imports, page cache, tree indexes, hooks."""
        kept = len(self.parts)
        for variant in ("bare", "collected"):
            self.run(variant)
        del self.parts[kept:]

    def run(self, variant: str) -> tuple[float, float, float]:
        """One run: (wall seconds, workers' CPU seconds, the collector's enter + exit seconds)."""
        from coffea import processor
        from coffea.nanoevents import NanoAODSchema
        from workload import Analysis, BareAnalysis

        from roastcoffea import MetricsCollector

        client = self.clients[variant]
        proc = BareAnalysis() if variant == "bare" else Analysis()
        runner = processor.Runner(
            executor=processor.DaskExecutor(client=client, status=False),
            schema=NanoAODSchema,
            chunksize=self.chunksize,
            savemetrics=True,
        )
        cpu0 = sum(client.run(worker_cpu_seconds).values())
        start = time.perf_counter()
        if variant == "bare":
            runner(self.fileset, processor_instance=proc, treename="Events")
            fixed = 0.0
        else:
            mc = MetricsCollector(client, processor_instance=proc)
            mc.__enter__()
            entered = time.perf_counter()
            try:
                output, report = runner(self.fileset, processor_instance=proc, treename="Events")
                mc.extract_metrics_from_output(output)
                mc.set_coffea_report(report)
            finally:
                leaving = time.perf_counter()
                mc.__exit__(None, None, None)
            fixed = entered - start + time.perf_counter() - leaving
        wall = time.perf_counter() - start
        cpu = sum(client.run(worker_cpu_seconds).values()) - cpu0
        if variant == "collected":
            self.parts.append(own_figures(mc.get_metrics()))
        return wall, cpu, fixed


def own_figures(metrics: dict[str, Any]) -> dict[str, Any]:
    """What a collected run says of itself (ours; 0.1.2 has none of these)."""
    keys = ("num_chunks", "instrument_cpu_seconds", "phase_clock_seconds", "total_events")
    return {key: metrics.get(key) for key in keys}


def child(files: list[str], chunksize: int, datasets: int, rounds: int) -> dict[str, Any]:
    """Run in one Python process: two clusters, a warm-up of each variant, then ``rounds``
    rounds, the clusters swapping roles (and warming up again) halfway."""
    from contextlib import ExitStack

    from coffea.nanoevents import NanoAODSchema
    from distributed import Client, LocalCluster

    import roastcoffea

    NanoAODSchema.warn_missing_crossrefs = False
    samples: dict[str, list[tuple[float, float, float]]] = {"bare": [], "collected": []}
    with ExitStack() as stack:
        clients = []
        for _ in range(2):
            cluster = stack.enter_context(
                LocalCluster(
                    n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
                )
            )
            clients.append(stack.enter_context(Client(cluster)))
        rounds_ = Rounds(*clients, files, chunksize, datasets)
        rounds_.warm_up()
        for i in range(rounds):
            if i and i == rounds // 2:
                rounds_.swap()
                rounds_.warm_up()
            order = ("bare", "collected") if i % 2 == 0 else ("collected", "bare")
            for variant in order:
                samples[variant].append(rounds_.run(variant))
    return {"version": roastcoffea.__version__, "samples": samples, "parts": rounds_.parts}


def spawn(
    python: str, files: list[str], chunksize: int, datasets: int, rounds: int
) -> dict[str, Any]:
    """Run :func:`child` with ``python``; its result, or ``{"error": ...}``."""
    args = ["--child", "--rounds", str(rounds), "--chunksize", str(chunksize)]
    args += ["--datasets", str(datasets), *files]
    return run_child(python, __file__, args, RESULT)


# --- the report ----------------------------------------------------------------------


def paired(result: dict[str, Any], chunks: int) -> dict[str, list[float]]:
    """Per round: wall ratio, workers' CPU ratio, and extra workers' CPU per chunk in ms."""
    bare, collected = result["samples"]["bare"], result["samples"]["collected"]
    pairs = list(zip(bare, collected, strict=True))
    return {
        "wall": [c[0] / b[0] for b, c in pairs],
        "cpu": [c[1] / b[1] for b, c in pairs],
        "ms": [1e3 * (c[1] - b[1]) / chunks for b, c in pairs],
    }


def report_size(chunksize: int, chunks: int, results: dict[str, dict[str, Any]]) -> None:
    def shown(values: list[float], digits: int) -> str:
        mean, low, high = interval(values)
        return f"{mean:.{digits}f} ({low:.{digits}f} to {high:.{digits}f})"

    rows, figures = [], {}
    for name, result in results.items():
        if "error" in result:
            rows.append([name, "-", "-", "-", "not measured"])
            continue
        figures[name] = paired(result, chunks)
        collected = result["samples"]["collected"]
        wall = median([c[0] for c in collected])
        fixed = median([c[2] for c in collected])
        rows.append(
            [
                f"{name} ({result['version']})",
                shown(figures[name]["wall"], 4),
                shown(figures[name]["cpu"], 4),
                shown(figures[name]["ms"], 2),
                f"{wall:.2f}",
                f"{1e3 * fixed:.0f} ({100 * fixed / wall:.2f}%)",
            ]
        )
    headers = [
        "collected / bare",
        "wall (95% CI)",
        "workers CPU (95% CI)",
        "workers CPU ms per chunk (95% CI)",
        "median wall s",
        "enter + exit ms (of the wall)",
    ]
    print(table(headers, rows))
    for name, result in results.items():
        if "error" in result:
            print(f"{name}: not measured: {result['error']}")
    ours = figures.get("ours")
    if ours is None:
        return
    target = TARGETS.get(chunksize)
    wall_high, cpu_high, ms_high = (interval(ours[k])[2] for k in ("wall", "cpu", "ms"))
    if target is not None:
        print(
            f"ours, upper end of the 95% CI: wall {wall_high:.4f}, workers' CPU {cpu_high:.4f}; "
            f"target <= {target}: {verdict(max(wall_high, cpu_high) <= target)}"
        )
    print(
        f"ours, cost per chunk: upper end {ms_high:.2f} ms, target <= {TARGET_MS_PER_CHUNK} ms: "
        f"{verdict(ms_high <= TARGET_MS_PER_CHUNK)}"
    )
    report_parts(results["ours"]["parts"], interval(ours["ms"])[0])
    theirs = figures.get("0.1.2")
    if theirs is not None:
        ratio = interval(theirs["ms"])[0] / interval(ours["ms"])[0]
        print(f"0.1.2's cost per chunk / ours: {ratio:.1f}x")


def report_parts(parts: list[dict[str, Any]], measured_ms: float) -> None:
    """The cost per chunk split by what the collected runs measured of themselves."""
    chunks = sum(p["num_chunks"] or 0 for p in parts)
    if not chunks or any(p["instrument_cpu_seconds"] is None for p in parts):
        print("parts: the collected runs did not report their own cost")
        return
    own = 1e3 * sum(p["instrument_cpu_seconds"] for p in parts) / chunks
    clock = 1e3 * sum(p["phase_clock_seconds"] or 0.0 for p in parts) / chunks
    rest = measured_ms - own - clock
    print(
        "ours, where a chunk's cost goes (the runs' own figures, per chunk): "
        f"instrumentation {own:.3f} ms ({100 * own / measured_ms:.0f}%, measured thread CPU), "
        f"phase clock {clock:.3f} ms ({100 * clock / measured_ms:.0f}%, estimated), "
        f"the rest {rest:.3f} ms ({100 * rest / measured_ms:.0f}%: the plugin's task-end "
        "work, the event loop)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10, help="rounds per chunk size (10)")
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=list(SIZES), help="chunk sizes to run"
    )
    parser.add_argument("--quick", action="store_true", help="small files, 3 rounds")
    parser.add_argument("--chunksize", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--datasets", type=int, help=argparse.SUPPRESS)
    child_arguments(parser)
    args = parser.parse_args(argv)
    if args.child:
        return answer_parent(RESULT, child(args.paths, args.chunksize, args.datasets, args.rounds))

    from roastcoffea.demo.nanoaod import ensure_files

    sizes = QUICK_SIZES if args.quick else {size: SIZES[size] for size in args.sizes}
    rounds = 3 if args.quick else args.rounds
    pythons = {"ours": sys.executable, "0.1.2": args.rc012_python}
    print(f"collector overhead: {rounds} rounds per chunk size and version; {machine()}")
    for chunksize, (events, n_files, datasets) in sizes.items():
        files = [str(p) for p in ensure_files(data_dir(events, n_files), events, n_files)]
        chunks = datasets * n_files * -(-events // n_files // chunksize)
        times = f", read {datasets} times" if datasets > 1 else ""
        print(
            f"\nchunks of {chunksize:,} events: {events:,} events in {n_files} files{times}, "
            f"{chunks} chunks per run",
            flush=True,
        )
        results = {}
        for name, python in pythons.items():
            if not Path(python).exists():
                results[name] = {"error": f"{python} not found (venv not made)"}
                continue
            results[name] = spawn(python, files, chunksize, datasets, rounds)
        report_size(chunksize, chunks, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
