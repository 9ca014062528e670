"""Collector exit latency: ours against roastcoffea 0.1.2 from PyPI, same workload.

What it measures: the time ``MetricsCollector.__exit__`` takes, from the last statement
of the ``with`` block (after ``set_coffea_report`` and ``extract_metrics_from_output``)
to the first statement after it. For ours that is the flush, the snapshot of the span and
the chunk records, the metrics being computed at the first ``get_metrics()``, timed apart
and added for the comparison with 0.1.2; for 0.1.2 its fixed ``time.sleep(0.5)``, the
span query and the aggregation.

How: a dijet + muon processor with ``@track_metrics`` and ``track_time`` sections (the
API both versions share) runs with coffea ``Runner`` + ``DaskExecutor`` on synthetic
NanoAOD files from ``roastcoffea.demo`` on a ``LocalCluster(n_workers=2,
threads_per_worker=1, processes=True)``. Each version runs in its own Python process:
ours with this interpreter, 0.1.2 with ``--rc012-python`` (a venv made with
``python3 -m venv /tmp/rc012 && /tmp/rc012/bin/pip install --ignore-requires-python
roastcoffea==0.1.2 coffea dask distributed``). The processes alternate (ours, 0.1.2,
ours, 0.1.2), each with a warm-up run that is not counted. When the 0.1.2 venv is
missing or its process fails, the reason is printed and only ours is measured. Target:
ours <= 50 ms (median). Nothing is asserted; the script prints figures.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

from coffea import processor
from common import (
    answer_parent,
    child_arguments,
    data_dir,
    machine,
    median,
    quantile,
    run_child,
    table,
    verdict,
)
from workload import TREE, Analysis

TARGET_MS = 50.0
RESULT = "EXIT-LATENCY-RESULT "


def child(files: list[str], runs: int, chunksize: int) -> dict[str, Any]:
    """Run in one Python process: ``runs`` measured runs after a warm-up.

    Ours also runs each measured run again with ``roastcoffea.hot-lines`` off, the two
    alternating, so the cost of fetching Dask's profile at exit is measured side by side.
    """
    import dask
    from coffea.nanoevents import NanoAODSchema
    from distributed import Client, LocalCluster

    import roastcoffea
    from roastcoffea import MetricsCollector

    NanoAODSchema.warn_missing_crossrefs = False
    fileset = {"synthetic": {"files": dict.fromkeys(files, TREE)}}
    latencies: list[float] = []
    without_hot_lines: list[float] = []
    with_metrics: list[float] = []  # the exit, then the first get_metrics()
    has_hot_lines = dask.config.get("roastcoffea.hot-lines", None) is not None
    settings = [True, False] if has_hot_lines else [True]
    summary: dict[str, Any] = {}
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        for i in range(runs + 1):
            for hot_lines in settings:
                proc = Analysis()
                runner = processor.Runner(
                    executor=processor.DaskExecutor(client=client, status=False),
                    schema=NanoAODSchema,
                    chunksize=chunksize,
                    savemetrics=True,
                )
                with (
                    dask.config.set({"roastcoffea.hot-lines": hot_lines}),
                    MetricsCollector(client, processor_instance=proc) as mc,
                ):
                    output, report = runner(fileset, processor_instance=proc, treename=TREE)
                    mc.extract_metrics_from_output(output)
                    mc.set_coffea_report(report)
                    start = time.perf_counter()
                latency = time.perf_counter() - start
                metrics = mc.get_metrics()
                if i > 0:
                    (latencies if hot_lines else without_hot_lines).append(latency)
                    if hot_lines:
                        with_metrics.append(time.perf_counter() - start)
            summary = {
                "num_chunks": metrics.get("num_chunks"),
                "total_events": metrics.get("total_events"),
                "chunk_records": len(mc.chunk_metrics),
            }
    return {
        "version": roastcoffea.__version__,
        "latencies": latencies,
        "without_hot_lines": without_hot_lines,
        "with_metrics": with_metrics,
        **summary,
    }


def spawn(python: str, files: list[str], runs: int, chunksize: int) -> dict[str, Any]:
    """Run :func:`child` with ``python``; its result, or ``{"error": ...}``."""
    args = ["--child", "--runs", str(runs), "--chunksize", str(chunksize), *files]
    return run_child(python, __file__, args, RESULT)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=200_000, help="events in all files")
    parser.add_argument("--files", type=int, default=2, help="number of files")
    parser.add_argument("--chunksize", type=int, default=50_000, help="coffea chunk size")
    parser.add_argument("--runs", type=int, default=10, help="measured runs per version")
    parser.add_argument("--quick", action="store_true", help="100k events, 6 runs")
    child_arguments(parser)
    args = parser.parse_args(argv)
    if args.child:
        return answer_parent(RESULT, child(args.paths, args.runs, args.chunksize))

    from roastcoffea.demo.nanoaod import ensure_files

    if args.quick:
        args.events, args.runs = 100_000, 6
    paths = ensure_files(data_dir(args.events, args.files), args.events, args.files)
    files = [str(p) for p in paths]
    print(
        f"collector exit latency: {args.events:,} events in {args.files} files, chunksize "
        f"{args.chunksize:,}, {args.runs} runs per version; {machine()}"
    )
    halves = [math.ceil(args.runs / 2), args.runs // 2]
    results: dict[str, dict[str, Any]] = {
        "ours": {"latencies": [], "without_hot_lines": [], "with_metrics": []},
        "0.1.2": {"latencies": []},
    }
    pythons = {"ours": sys.executable, "0.1.2": args.rc012_python}
    if not Path(args.rc012_python).exists():
        results["0.1.2"]["error"] = f"{args.rc012_python} not found (venv not made)"
    for runs in halves:
        for name, python in pythons.items():
            if runs == 0 or "error" in results[name]:
                continue
            got = spawn(python, files, runs, args.chunksize)
            if "error" in got:
                results[name]["error"] = got["error"]
                continue
            results[name]["latencies"] += got.pop("latencies")
            if name == "ours":
                for key in ("without_hot_lines", "with_metrics"):
                    results[name][key] += got.pop(key)
            results[name].update(got)
            print(f"  {name}: {runs} runs done", flush=True)

    rows = []
    for name, result in results.items():
        ms = [x * 1e3 for x in result["latencies"]]
        if not ms:
            rows.append([name, result.get("version", "?"), 0, "-", "-", "-", "-"])
            continue
        rows.append(
            [
                name,
                result["version"],
                len(ms),
                f"{median(ms):.1f}",
                f"{quantile(ms, 0.9):.1f}",
                f"{min(ms):.1f}",
                f"{max(ms):.1f}",
            ]
        )
    print()
    print(table(["collector", "version", "runs", "median ms", "p90 ms", "min ms", "max ms"], rows))
    for name, result in results.items():
        if "error" in result:
            print(f"\n{name}: not measured: {result['error']}")
        elif result["latencies"]:
            print(
                f"{name}: {result['num_chunks']} chunks, {result['total_events']:,} events, "
                f"{result['chunk_records']} chunk records in the collector"
            )
    ours = results["ours"]["latencies"]
    if ours:
        ours_ms = median(ours) * 1e3
        print(
            f"\nours: median {ours_ms:.1f} ms, target <= {TARGET_MS:.0f} ms: "
            f"{verdict(ours_ms <= TARGET_MS)}"
        )
        plain = results["ours"]["without_hot_lines"]
        if plain:
            print(
                f"ours without hot lines (roastcoffea.hot-lines false, alternating): median "
                f"{median(plain) * 1e3:.1f} ms; with / without: {median(ours) / median(plain):.3f}"
            )
        computed = results["ours"]["with_metrics"]
        print(
            f"ours, the exit then the first get_metrics() (what 0.1.2's exit does): median "
            f"{median(computed) * 1e3:.1f} ms"
        )
        theirs = results["0.1.2"]["latencies"]
        if theirs:
            print(f"0.1.2 / ours, metrics computed: {median(theirs) / median(computed):.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
