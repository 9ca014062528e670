"""What monitoring adds to a Dask worker's garbage collector: promoted objects and live heap.

What it measures: the ``Analysis`` processor of ``bench/workload.py`` with ``@track_metrics``
inside ``MetricsCollector`` on a one-worker ``LocalCluster`` (worker processes) with
``RoastPlugin``, and the bare processor on another without it, alternating, on the demo's
synthetic NanoAOD at ``--chunksize``. In each worker, after a warm-up run, the full
collections are held off (the third threshold raised) and ``--chunks`` chunks run:

- the objects the run promoted into the oldest generation, per task, counted as CPython
  counts them (``long_lived_pending``): at each collection of the two young generations,
  the objects in them (``gc.callbacks``, at its start) less those it freed. An object
  promoted counts even if it dies soon after (one that lives through a task, say). CPython
  starts a full collection once this count passes a quarter of the objects that survived the
  last one, so this rate sets how often a worker pays a full collection;
- the live objects after a full collection (what each full collection traverses), and that
  collection's CPU seconds.

A full collection's cost grows with the live heap and their frequency falls with it (the
quarter), so a heap a little larger costs nothing in the long run; more promoted objects
per task would. Nothing is asserted; the script prints figures.

Run: ``.venv/bin/python bench/gc_promotion.py --chunksize 1000 --chunks 60`` (about 2 minutes).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from common import data_dir, machine, table

HELD_OFF = 10**9  # the third threshold: no full collection while a run is counted


def count_promotions(dask_worker: Any) -> int:
    """In a worker: a full collection, then none, and the young collections' promotions
    counted (``gc.callbacks``) until :func:`promotions_after`; the third threshold it had."""
    import gc

    gc.collect()
    young, middle, oldest = gc.get_threshold()
    gc.set_threshold(young, middle, HELD_OFF)
    counted = [0, 0]  # objects promoted, objects in the young generations at a start

    def promotions(phase: str, info: dict[str, int]) -> None:
        if info["generation"] != 1:
            return
        if phase == "start":
            counted[1] = len(gc.get_objects(0)) + len(gc.get_objects(1))
        else:
            counted[0] += counted[1] - info["collected"] - info["uncollectable"]

    gc.callbacks.append(promotions)
    dask_worker.bench_promotions = (promotions, counted)
    return oldest


def promotions_after(threshold: int, dask_worker: Any) -> tuple[int, int, float]:
    """In a worker: the objects promoted since :func:`count_promotions`, the live objects
    after a full collection and the CPU seconds of the next; the third threshold put back."""
    import gc

    callback, counted = dask_worker.bench_promotions
    gc.callbacks.remove(callback)
    gc.collect()
    start = time.thread_time()
    gc.collect()
    seconds = time.thread_time() - start
    gc.set_threshold(*gc.get_threshold()[:2], threshold)
    return counted[0], len(gc.get_objects()), seconds


def run(client: Any, monitored: bool, fileset: dict, chunksize: int, chunks: int) -> None:
    from coffea import processor
    from coffea.nanoevents import NanoAODSchema
    from workload import Analysis, BareAnalysis

    from roastcoffea import MetricsCollector

    runner = processor.Runner(
        executor=processor.DaskExecutor(client=client, status=False),
        schema=NanoAODSchema,
        chunksize=chunksize,
        maxchunks=chunks,
    )
    if not monitored:
        runner(fileset, processor_instance=BareAnalysis(), treename="Events")
        return
    analysis = Analysis()
    with MetricsCollector(client, processor_instance=analysis) as collector:
        collector.extract_metrics_from_output(
            runner(fileset, processor_instance=analysis, treename="Events")
        )


def measure(monitored: bool, fileset: dict, chunksize: int, chunks: int) -> tuple[float, ...]:
    """(promoted objects per task, live objects, a full collection's CPU seconds)."""
    from distributed import Client, LocalCluster

    from roastcoffea import RoastPlugin

    with (
        LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0") as cluster,
        Client(cluster) as client,
    ):
        if monitored:
            client.register_plugin(RoastPlugin())
        run(client, monitored, fileset, chunksize, 4)  # imports, hooks, page cache
        (threshold,) = client.run(count_promotions).values()
        run(client, monitored, fileset, chunksize, chunks)
        time.sleep(2.5)  # the heartbeats that file the run's digests
        ((promoted, live, seconds),) = client.run(promotions_after, threshold).values()
    return promoted / chunks, live, seconds


def main(argv: list[str] | None = None) -> int:
    from coffea.nanoevents import NanoAODSchema

    from roastcoffea.demo.nanoaod import DEFAULT_EVENTS, DEFAULT_FILES, ensure_files

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunksize", type=int, default=1000, help="events per chunk (1,000)")
    parser.add_argument("--chunks", type=int, default=60, help="chunks per counted run (60)")
    parser.add_argument("--pairs", type=int, default=2, help="bare and monitored runs (2)")
    args = parser.parse_args(argv)
    NanoAODSchema.warn_missing_crossrefs = False
    files = ensure_files(data_dir(DEFAULT_EVENTS, DEFAULT_FILES), DEFAULT_EVENTS, DEFAULT_FILES)
    fileset = {"synthetic": {"files": {str(path): "Events" for path in files}}}
    figures: dict[str, list[tuple[float, ...]]] = {"bare": [], "monitored": []}
    for _ in range(args.pairs):
        for name in figures:
            figures[name].append(measure(name == "monitored", fileset, args.chunksize, args.chunks))
    print(
        f"gc promotion: {args.pairs} runs of each, {args.chunks} chunks of "
        f"{args.chunksize:,} events per run; {machine()}\n"
    )
    rows = []
    for name, runs in figures.items():
        promoted, live, seconds = zip(*runs, strict=True)
        rows.append(
            [
                name,
                ", ".join(f"{p:,.0f}" for p in promoted),
                ", ".join(f"{n:,}" for n in live),
                f"{1e3 * statistics.median(seconds):.1f}",
            ]
        )
    headers = ["worker", "promoted per task", "live objects", "full collection, ms (median)"]
    print(table(headers, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
