"""Where a monitored chunk's CPU goes on the worker, each part timed in place.

What it measures: the ``Analysis`` processor of ``bench/workload.py`` with ``@track_metrics``
inside ``MetricsCollector``, with coffea ``Runner`` + ``DaskExecutor`` on
``LocalCluster(n_workers=1, threads_per_worker=1, processes=True)`` with ``RoastPlugin``, on
the workload of ``bench/chunk_overhead.py`` at one chunk size. After a warm-up run, the
parts of the monitoring are wrapped on the worker in a timer of the calling thread's CPU
clock, and ``--runs`` runs are timed:

- in the task's thread: the decorator's RSS reads (``Measure._memory``), its work item
  metadata, its byte accounting (``Measure._files``, of it the basket lookups
  ``chunk_baskets`` and ``record_fields``), its hand-off (``add_chunk``), and the phase
  clock's sink (closing the task's phases, its record and digests);
- in the task's thread, not wrappable (a ``pread`` in the native phase clock): the run-queue
  delay reads, counted by each task's clock (``TaskPhases.runq_reads``) and costed at one
  ``os.pread`` of an open ``/proc/thread-self/schedstat`` timed on the worker (an upper bound:
  the clock's read skips Python's call);
- on the event loop: the worker plugin's ``transition`` hook, of it the records' release
  (``Outbox.send``: completing, encoding, queueing the records op) and the phase digests
  summed (``PhaseSums.add``), and its heartbeat payload with the phase sums it files
  (``PhaseSums.file``); every ``Worker.digest_metric`` call (Dask's
  own included: a bare worker makes about 19 per task) and every ``Worker.batched_send``
  (Dask's own included: the task's messages to the scheduler).

A part nested in another is also in the other's figure. Each timed call also pays its
timer (two reads of the CPU clock, printed as the timer's own cost). The instrumentation's
whole measured CPU per chunk, from its records, is printed beside them. These are parts of
what ``bench/chunk_overhead.py`` measures as a whole against a bare run; nothing is
asserted.

Run: ``.venv/bin/python bench/chunk_parts.py --chunksize 1000`` (about 4 minutes).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from chunk_overhead import SIZES
from common import data_dir, machine, table

#: (owner on the worker, attribute, label) of each timed part; owners are named below.
PARTS = (
    ("measure", "_memory", "decorator: RSS read"),
    ("measure", "_metadata", "decorator: work item metadata"),
    ("measure", "_files", "decorator: bytes, branches, baskets"),
    ("index", "chunk_baskets", "  basket lookup"),
    ("index", "record_fields", "  basket sizes"),
    ("plugin", "add_chunk", "decorator: hand-off to the plugin"),
    ("plugin", "transition", "loop: plugin transition hook"),
    ("outbox", "send", "  records completed, encoded, sent"),
    ("outbox", "_sum_phases", "  phase digests summed"),
    ("plugin", "_payload", "loop: heartbeat payload"),
    ("sums", "file", "  phase sums filed"),
    ("worker", "digest_metric", "loop: Worker.digest_metric (Dask's too)"),
    ("worker", "batched_send", "loop: Worker.batched_send (Dask's too)"),
)
SINK = "task: phase sink (phases, record, digests)"
RUNQ = "task: run-queue delay reads (schedstat)"


def install_timers(dask_worker: Any) -> tuple[float, float]:
    """Wrap every part in a thread-CPU timer; returns the timer's and a schedstat read's cost."""
    import functools

    from roastcoffea.instrument import _baskets, _measure, phases

    plugin = dask_worker.plugins["roastcoffea"]
    owners = {
        "measure": _measure.Measure,
        "index": _baskets.TreeIndex,
        "plugin": plugin,
        "outbox": plugin._outbox,
        "sums": plugin._phase_sums,
        "worker": dask_worker,
    }
    totals: dict[str, list[float]] = {}
    dask_worker.bench_parts = totals

    def timed(label: str, function: Any) -> Any:
        total = totals.setdefault(label, [0.0, 0])

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                total[0] += time.thread_time() - start
                total[1] += 1

        return wrapper

    for owner, name, label in PARTS:
        setattr(owners[owner], name, timed(label, getattr(owners[owner], name)))
    dask_worker.metrics["roastcoffea"] = plugin._payload  # the wrapped one
    reads, sink = totals.setdefault(RUNQ, [0.0, 0]), timed(SINK, phases._sink)

    def counting_sink(task: Any) -> None:
        reads[1] += task.runq_reads
        sink(task)

    phases.set_sink(counting_sink, cpu_interval=plugin.phase_cpu_interval)
    empty = timed("empty", lambda: None)
    for _ in range(10_000):
        empty()
    own = totals.pop("empty")
    return own[0] / own[1], schedstat_read_seconds()


def schedstat_read_seconds(reads: int = 20_000) -> float:
    """CPU seconds of one ``os.pread`` of the calling thread's open schedstat (nan: none)."""
    try:
        fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
    except OSError:
        return float("nan")
    try:
        start = time.thread_time()
        for _ in range(reads):
            os.pread(fd, 64, 0)
        return (time.thread_time() - start) / reads
    finally:
        os.close(fd)


def read_parts(dask_worker: Any) -> dict[str, list[float]]:
    """The timed parts' totals since the last read: {label: [cpu seconds, calls]}."""
    totals = dask_worker.bench_parts
    out = {label: list(value) for label, value in totals.items()}
    for value in totals.values():
        value[:] = [0.0, 0]
    return out


def run(client: Any, fileset: dict[str, Any], chunksize: int) -> dict[str, Any]:
    """One collected run; its metrics."""
    from coffea import processor
    from coffea.nanoevents import NanoAODSchema
    from workload import Analysis

    from roastcoffea import MetricsCollector

    runner = processor.Runner(
        executor=processor.DaskExecutor(client=client, status=False),
        schema=NanoAODSchema,
        chunksize=chunksize,
        savemetrics=True,
    )
    with MetricsCollector(client, processor_instance=Analysis()) as mc:
        _, report = runner(fileset, processor_instance=Analysis(), treename="Events")
        mc.set_coffea_report(report)
    return mc.get_metrics()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunksize", type=int, choices=sorted(SIZES), default=1000)
    parser.add_argument("--runs", type=int, default=3, help="timed runs (3)")
    parser.add_argument("--quick", action="store_true", help="one timed run")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs = 1

    from coffea.nanoevents import NanoAODSchema
    from distributed import Client, LocalCluster

    from roastcoffea import RoastPlugin
    from roastcoffea.demo.nanoaod import ensure_files

    NanoAODSchema.warn_missing_crossrefs = False
    events, n_files, datasets = SIZES[args.chunksize]
    files = [str(p) for p in ensure_files(data_dir(events, n_files), events, n_files)]
    fileset = {f"synthetic-{i}": {"files": dict.fromkeys(files, "Events")} for i in range(datasets)}
    print(f"worker parts: chunks of {args.chunksize:,} events, {args.runs} runs; {machine()}")
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=True) as cluster,
        Client(cluster) as client,
    ):
        client.register_plugin(RoastPlugin())
        run(client, fileset, args.chunksize)  # warm-up: imports, tree indexes, hooks
        ((timer, runq_read),) = client.run(install_timers).values()
        client.run(read_parts)
        chunks, instrument = 0, 0.0
        for _ in range(args.runs):
            metrics = run(client, fileset, args.chunksize)
            chunks += metrics["num_chunks"]
            instrument += metrics["instrument_cpu_seconds"]
        (parts,) = client.run(read_parts).values()
    parts[RUNQ][0] = parts[RUNQ][1] * runq_read
    rows = []
    labels = [label for _, _, label in PARTS]
    for label in [*labels[:6], SINK, RUNQ, *labels[6:]]:  # the task's after the decorator's
        seconds, calls = parts.get(label, [0.0, 0])
        per_call = 1e6 * seconds / calls if calls else float("nan")
        rows.append(
            (label, f"{calls / chunks:.2f}", f"{per_call:.1f}", f"{1e3 * seconds / chunks:.3f}")
        )
    print(table(("part", "calls per chunk", "µs per call", "ms per chunk"), rows))
    print(
        f"{chunks} chunks; the instrumentation's own measured CPU (its records): "
        f"{1e3 * instrument / chunks:.3f} ms per chunk; the timer's own cost: "
        f"{1e6 * timer:.2f} µs per call"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
