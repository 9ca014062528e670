"""What monitoring costs an analysis, side by side with the bare run, at small and large chunks.

What it measures: the ``Analysis`` processor of ``bench/workload.py`` (leading dijet mass and
good muons in two ``track_time`` sections) on the demo's synthetic NanoAOD, with coffea
``Runner`` + ``DaskExecutor`` on one worker process with one thread, at two chunk sizes:

- 1,000-event chunks: 200,000 events in 2 files, 200 chunks per run;
- 100,000-event chunks: 1,600,000 events in 8 files read four times (four datasets of the
  same files), 64 chunks per run.

A run is long enough (10-20 s of the worker's time at either size) that what the collector
costs once per run (entering and leaving ``MetricsCollector``: a round trip to the
scheduler, the flush, the snapshot) weighs little against the chunks; it is timed apart and
reported as the run's fixed cost.

Two long-lived clusters run side by side, one with the roastcoffea plugin registered, one
without, each with its scheduler in a process of its own as a deployed cluster has
(``SubprocessCluster``). Each round runs two variants at once, each on its cluster (two
client threads in this process):

- bare: the undecorated processor, on the cluster without the plugin;
- collected: ``@track_metrics`` on the cluster with the plugin, the run inside
  ``MetricsCollector(client)`` with ``set_coffea_report``; timed from before ``__enter__``
  to after ``__exit__``.

While they run, each worker process is pinned (every thread of it, ``sched_setaffinity``)
to one of two cores, and the two swap cores every 0.2 s (:class:`CoreRotation`): each worker
runs alone on a core, both variants run under the same machine at the same moment, and a core
faster than the other favours neither. (Run one after the other, two runs a few seconds
apart differ by 3-5 % of their workers' CPU on this machine; at once on shared cores both
variants pay for the sharing, the monitored one more.) ``--alone`` also runs the two variants
one after the other in every round, as a check of the runs at once.

Before each run every worker collects its garbage in full, untimed, then moves to one point
of CPython's collection cycle drawn at random, common to both variants (``gc.collect(1)`` and
``gc.collect(0)`` advance the counters). Full collections are 10-25 % of the workers' CPU
here; without the random point, a run's fixed workload would end at the same point of the
cycle every round, and a variant that allocates 1 % more would pay a whole full collection in
every run or in none.

The plugin stays registered across rounds, as on a facility's cluster. Halfway, the clusters
swap roles (the plugin removed from one and registered on the other, then a warm-up run of
both), so a worker process's own speed does not count as the plugin's.

Per round, paired: the wall-time ratio collected / bare, the ratio of the workers' CPU
seconds (``os.times()`` of each worker process, every thread), and the cost per chunk, the
workers' extra CPU over the chunks. The rounds come in blocks (``--blocks``, 5 of
``--rounds`` 4), each block on two new clusters, since new worker processes each have a speed
of their own; the figures are means over the blocks' means with 95 % confidence intervals
(Student's t over the blocks).

Where a chunk's cost goes, per round: the workers' extra CPU in their tasks' threads (Dask's
``thread-cpu`` fine metrics), in their event loops (the loop thread's CPU clock: the worker
plugin's task-end work, heartbeats, messages) and elsewhere in the processes; within the
tasks, the collected runs' own figures (the instrumentation's thread CPU, the phase clock's
estimate); the workers' kernel CPU, minor page faults and garbage collections
(``gc.callbacks``: each collection's CPU, the full ones counted); and the CPU of each
scheduler's event loop thread.

``--split`` also splits the wall of every run at once by Dask's own task stream, bare and
collected alike (:mod:`task_stream_split`: the collector's entry and exit, start-up, each task
prefix's compute, the thread idle between tasks, the finish), and prints collected - bare per
part: where the wall the monitoring adds goes.

``--without phases`` runs ours with the phase clock off (``RoastPlugin(phases=False)``), and
``--without decorator`` runs the plugin and the phase clock on the bare processor (no
``@track_metrics``). ``--against phases`` makes the baseline ours with the clock off (the
plugin, ``@track_metrics`` and the collector all there), so every ratio is the clock's alone.

roastcoffea 0.1.2 from PyPI runs the same rounds under ``--rc012-python`` (bare against its
decorator and collector), each version in its own Python process, ours first; ``make bench``
makes that venv (``make bench-0.1.2``). Nothing is asserted; the script prints figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sys
import time
from dataclasses import dataclass
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
)
from task_stream_split import PARTS, stream_index, stream_since, wall_parts

from roastcoffea.demo.xrootd import serve

RESULT = "COLLECTOR-OVERHEAD-RESULT "
#: chunk size -> (events, files, datasets) of the workload: each dataset reads all the
#: files; --quick shrinks it.
SIZES = {1_000: (200_000, 2, 1), 100_000: (1_600_000, 8, 4)}
QUICK_SIZES = {1_000: (20_000, 1, 1), 50_000: (400_000, 4, 1)}
#: chunk size -> the largest collected / bare ratio the target allows.
#: chunk size -> the workers' CPU ratio accepted for the default (phases on), docs/performance.md
ACCEPTED = {1_000: 1.01, 100_000: 1.007}
#: The two cores the runs at once use, and how often their workers swap them.
CORES = sorted(os.sched_getaffinity(0))[:2] if hasattr(os, "sched_getaffinity") else []
ROTATION_SECONDS = 0.2


# --- one version, in its own process -------------------------------------------------


def start_collector_at(phase: tuple[int, int]) -> None:
    """Collect the garbage in full, then advance the collector ``phase`` = (young
    collections, middle ones) into its cycle of full collections."""
    import gc

    gc.collect()
    young, middle = phase
    for _ in range(middle):
        gc.collect(1)
    for _ in range(young):
        gc.collect(0)


def draw_collector_phase(draw: random.Random) -> tuple[int, int]:
    """A point of the collector's cycle, uniform, as (young, middle) collections into it.

    A middle collection comes when ``threshold[1] + 1`` young ones have been counted, a
    full one when ``threshold[2] + 1`` middle ones have: the cycle holds
    ``(threshold[1] + 2) * (threshold[2] + 1) + 1`` collections.
    """
    import gc

    _, young, middle = gc.get_threshold()
    step = draw.randrange((young + 2) * (middle + 1) + 1)
    middles, youngs = divmod(step, young + 2)
    return youngs, middles


def clock_collections(dask_worker: Any) -> None:
    """Time the worker's garbage collections from now on: the CPU seconds of each in the
    thread that runs it, and the number of full ones (``gc.callbacks``, once per worker)."""
    import gc
    import time

    if hasattr(dask_worker, "bench_collections"):
        return
    totals = dask_worker.bench_collections = [0.0, 0]
    started = [0.0]

    def timed(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.thread_time()
            return
        totals[0] += time.thread_time() - started[0]
        totals[1] += info["generation"] == 2

    gc.callbacks.append(timed)


def worker_cpu_seconds(dask_worker: Any) -> tuple[float, ...]:
    """The worker process's CPU seconds, the part Dask measured in its tasks' threads, its
    event loop's (``client.run`` calls this in the loop's thread), its kernel CPU seconds,
    its minor page faults, its garbage collections' CPU seconds and its full collections
    (:func:`clock_collections`).

    The second is Dask's own ``("execute", span, prefix, "thread-cpu", "seconds")``
    fine metrics: the tasks' thread CPU, the decorator and the phase clock's hooks
    included. The rest of the process is the event loop (the worker plugin, messages,
    heartbeats) and Dask's other threads (its profiler, the offload thread). The kernel's
    part is mostly page faults: Dask starts workers with ``MALLOC_TRIM_THRESHOLD_=65536``,
    so memory freed is returned to the kernel and faulted in again.
    """
    import os
    import resource
    import time

    times = os.times()
    tasks = sum(
        value
        for key, value in dask_worker.digests_total.items()
        if isinstance(key, tuple) and key[0] == "execute" and key[-2:] == ("thread-cpu", "seconds")
    )
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    collections, full = dask_worker.bench_collections
    return (
        times.user + times.system,
        tasks,
        time.thread_time(),
        times.system,
        float(faults),
        collections,
        float(full),
    )


def set_affinity(pid: int, cores: set[int]) -> None:
    """Every thread of process ``pid`` on ``cores``; threads it starts later inherit it."""
    for thread in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):  # the thread ended meanwhile
            os.sched_setaffinity(int(thread), cores)


class CoreRotation:
    """Two worker processes, each alone on one of two cores, swapping cores every
    ``period`` seconds while the ``with`` block runs; then free to run on any core.

    Each worker runs about half the time on each core, so a core faster than the other
    (they drift by a few per cent here) favours neither, and neither shares its core with
    the other.
    """

    def __init__(self, pids: list[int], cores: list[int], period: float) -> None:
        import threading

        self.pids, self.cores, self.period = pids, cores, period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._rotate, daemon=True)

    def _rotate(self) -> None:
        turn = 0
        while True:
            for i, pid in enumerate(self.pids):
                set_affinity(pid, {self.cores[(i + turn) % 2]})
            turn += 1
            if self._stop.wait(self.period):
                return

    def __enter__(self) -> CoreRotation:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        for pid in self.pids:
            set_affinity(pid, set(self.cores))


def scheduler_loop_cpu(dask_scheduler: Any) -> float:
    """The CPU seconds of the scheduler's event loop thread."""
    return time.thread_time()


def workers_cpu(client: Any) -> tuple[float, ...]:
    """:func:`worker_cpu_seconds` summed over the client's workers."""
    readings = list(client.run(worker_cpu_seconds).values())
    return tuple(sum(r[i] for r in readings) for i in range(len(readings[0])))


class Rounds:
    """The two variants on two clusters, under whichever roastcoffea is installed."""

    def __init__(
        self,
        bare: Any,
        collected: Any,
        files: list[str],
        chunksize: int,
        datasets: int,
        draw: random.Random,
        without: str | None = None,
        against: str | None = None,
        split: bool = False,
    ) -> None:
        import roastcoffea

        self.clients = {"bare": bare, "collected": collected}
        self.fileset = {
            f"synthetic-{i}": {"files": dict.fromkeys(files, "Events")} for i in range(datasets)
        }
        self.chunksize = chunksize
        self.draw = draw  # one sequence for all blocks: each block's rounds start anew
        self.plugin = getattr(roastcoffea, "RoastPlugin", None)  # ours only
        # --without: the part of ours the collected variant runs without
        self.plugin_options = {"phases": False} if without == "phases" else {}
        self.decorated = without != "decorator"
        # --against: the baseline variant is ours too, with these options; None: bare
        self.baseline_options = {"phases": False} if against == "phases" else None
        self.parts: list[dict[str, Any]] = []
        # --split: each run at once's wall split from Dask's task stream, per variant
        self.split = split
        self.splits: list[dict[str, dict[str, float]]] = []
        self._last_split: dict[str, dict[str, float]] = {}
        for client in (bare, collected):
            client.run(clock_collections)
            if split:
                client.run_on_scheduler(stream_index)
        self._register()

    def _register(self) -> None:
        """The plugin on the collected cluster (and the baseline's on the bare one, if any)."""
        if self.plugin is None:
            return
        self.clients["collected"].register_plugin(self.plugin(**self.plugin_options))
        if self.baseline_options is not None:
            self.clients["bare"].register_plugin(self.plugin(**self.baseline_options))

    def swap(self) -> None:
        """Move the plugin to the other cluster: the clusters swap roles."""
        bare, collected = self.clients["bare"], self.clients["collected"]
        if self.plugin is not None:
            from roastcoffea.plugin import stop

            stop(collected)
            if self.baseline_options is not None:
                stop(bare)
        self.clients = {"bare": collected, "collected": bare}
        self._register()

    def warm_up(self) -> None:
        """A run of each variant, not measured: imports, page cache, tree indexes, hooks."""
        kept, kept_splits = len(self.parts), len(self.splits)
        self.run_together((0, 0))
        del self.parts[kept:]
        del self.splits[kept_splits:]

    def phase(self) -> tuple[int, int]:
        """The collector's starting point for the runs of a round (:func:`draw_collector_phase`)."""
        return draw_collector_phase(self.draw)

    def run_together(self, phase: tuple[int, int]) -> dict[str, tuple[float, ...]]:
        """Both variants at once, each on its cluster: what :meth:`run` returns of each."""
        import threading

        samples: dict[str, tuple[float, ...]] = {}

        def one(variant: str) -> None:
            samples[variant] = self.run(variant, phase)

        threads = [threading.Thread(target=one, args=(v,)) for v in ("bare", "collected")]
        pids = [pid for client in self.clients.values() for pid in client.run(os.getpid).values()]
        with CoreRotation(pids, CORES, ROTATION_SECONDS):
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        missing = {"bare", "collected"} - samples.keys()
        if missing:
            raise RuntimeError(f"the together run of {sorted(missing)} failed")
        if self.split:
            self.splits.append(dict(self._last_split))
        return samples

    def run(self, variant: str, phase: tuple[int, int]) -> tuple[float, ...]:
        """One run, the workers' garbage collectors started at ``phase``: (wall seconds,
        workers' CPU seconds, the collector's enter + exit seconds,
        the workers' CPU seconds in their tasks' threads, in their event loops, in their
        kernel, the workers' minor page faults, their garbage collections' CPU seconds, their
        full collections, the CPU seconds of the scheduler's event loop)."""
        from coffea import processor
        from coffea.nanoevents import NanoAODSchema
        from workload import Analysis, BareAnalysis

        from roastcoffea import MetricsCollector

        client = self.clients[variant]
        monitored = variant == "collected" or self.baseline_options is not None
        proc = Analysis() if monitored and self.decorated else BareAnalysis()
        runner = processor.Runner(
            executor=processor.DaskExecutor(client=client, status=False),
            schema=NanoAODSchema,
            chunksize=self.chunksize,
            savemetrics=True,
        )
        client.run(start_collector_at, phase)
        index = client.run_on_scheduler(stream_index) if self.split else 0
        before = workers_cpu(client)
        scheduler_before = client.run_on_scheduler(scheduler_loop_cpu)
        # the wall clock the workers stamp their tasks with, for the split
        start = entered = time.time()
        if not monitored:
            runner(self.fileset, processor_instance=proc, treename="Events")
            leaving = time.time()
        else:
            mc = MetricsCollector(client, processor_instance=proc)
            mc.__enter__()
            entered = time.time()
            try:
                output, report = runner(self.fileset, processor_instance=proc, treename="Events")
                mc.extract_metrics_from_output(output)
                mc.set_coffea_report(report)
            finally:
                leaving = time.time()
                mc.__exit__(None, None, None)
        end = time.time()
        wall, fixed = end - start, entered - start + end - leaving
        if self.split:
            tasks = client.run_on_scheduler(stream_since, index=index)
            self._last_split[variant] = wall_parts(
                tasks, start, entered, leaving, end, frozenset({type(proc).__name__})
            )
        scheduler = client.run_on_scheduler(scheduler_loop_cpu) - scheduler_before
        cpu, tasks, loop, kernel, faults, collections, full = (
            b - a for a, b in zip(before, workers_cpu(client), strict=True)
        )
        if variant == "collected":
            self.parts.append(own_figures(mc.get_metrics()))
        return wall, cpu, fixed, tasks, loop, kernel, faults, collections, full, scheduler


def own_figures(metrics: dict[str, Any]) -> dict[str, Any]:
    """What a collected run says of itself (ours; 0.1.2 has none of these)."""
    keys = ("num_chunks", "instrument_cpu_seconds", "phase_clock_seconds", "total_events")
    return {key: metrics.get(key) for key in keys}


@dataclass(frozen=True)
class Plan:
    """What one Python process runs: the workload, its rounds and blocks, and which variants."""

    files: list[str]
    chunksize: int
    datasets: int
    rounds: int
    blocks: int
    alone: bool = False  # also the variants one after the other
    without: str | None = None  # the part of ours the collected variant runs without
    against: str | None = None  # the baseline is ours without this part (None: bare)
    split: bool = False  # each run's wall split from Dask's task stream

    def arguments(self) -> list[str]:
        """The command line that makes :func:`main` run :func:`child` with this plan."""
        args = ["--child", "--rounds", str(self.rounds), "--blocks", str(self.blocks)]
        args += ["--alone"] if self.alone else []
        args += ["--without", self.without] if self.without else []
        args += ["--against", self.against] if self.against else []
        args += ["--split"] if self.split else []
        args += ["--chunksize", str(self.chunksize), "--datasets", str(self.datasets)]
        return [*args, *self.files]


def child(plan: Plan) -> dict[str, Any]:
    """Run in one Python process: ``plan.blocks`` blocks of ``plan.rounds`` rounds, each block
    on two new clusters (a warm-up of each variant, the clusters swapping roles and warming up
    again halfway)."""
    from contextlib import ExitStack

    from coffea.nanoevents import NanoAODSchema
    from distributed import Client
    from distributed.deploy.subprocess import SubprocessCluster

    import roastcoffea

    NanoAODSchema.warn_missing_crossrefs = False
    # The clusters' processes unpickle the processors of bench/workload.py.
    here = str(Path(__file__).resolve().parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))
    samples: dict[str, list[tuple[float, ...]]] = {"bare": [], "collected": []}
    together: dict[str, list[tuple[float, ...]]] = {"bare": [], "collected": []}
    parts: list[dict[str, Any]] = []
    splits: list[dict[str, dict[str, float]]] = []
    draw = random.Random(plan.chunksize)
    for _ in range(plan.blocks):
        with ExitStack() as stack:
            clients = []
            for _ in range(2):
                cluster = stack.enter_context(
                    SubprocessCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0")
                )
                clients.append(stack.enter_context(Client(cluster)))
                clients[-1].wait_for_workers(1)  # the cluster returns before they connect
            rounds_ = Rounds(
                clients[0],
                clients[1],
                plan.files,
                plan.chunksize,
                plan.datasets,
                draw,
                plan.without,
                plan.against,
                plan.split,
            )
            rounds_.warm_up()
            for i in range(plan.rounds):
                if i and i == plan.rounds // 2:
                    rounds_.swap()
                    rounds_.warm_up()
                if plan.alone:
                    order = ("bare", "collected") if i % 2 == 0 else ("collected", "bare")
                    phase = rounds_.phase()
                    for variant in order:
                        samples[variant].append(rounds_.run(variant, phase))
                for variant, sample in rounds_.run_together(rounds_.phase()).items():
                    together[variant].append(sample)
            parts += rounds_.parts
            splits += rounds_.splits
    return {
        "version": roastcoffea.__version__,
        "blocks": plan.blocks,
        "samples": samples,
        "together": together,
        "parts": parts,
        "splits": splits,
    }


def spawn(python: str, plan: Plan) -> dict[str, Any]:
    """Run :func:`child` with ``python``; its result, or ``{"error": ...}``."""
    return run_child(python, __file__, plan.arguments(), RESULT)


# --- the report ----------------------------------------------------------------------


def coffea_chunks(entries: int, chunksize: int) -> int:
    """How many chunks coffea's executor makes of a file of ``entries``: round(entries /
    chunksize), at least one, of equal size (``coffea.processor.executor``)."""
    return max(round(entries / chunksize), 1)


def paired(result: dict[str, Any], chunks: int) -> dict[str, list[float]]:
    """Per round of the runs at once: wall ratio, workers' CPU ratio, and extra workers' CPU
    per chunk in ms, all of it and its parts (threads, kernel, collector); the same figures,
    prefixed ``alone_``, of the runs one after the other (``--alone``; none without)."""
    figures: dict[str, list[float]] = {}
    for prefix, runs in (("", result["together"]), ("alone_", result["samples"])):
        pairs = list(zip(runs["bare"], runs["collected"], strict=True))
        figures[prefix + "cpu"] = [c[1] / b[1] for b, c in pairs]
        # CPU seconds at 1 (the whole workers), 3 (tasks' threads), 4 (event loops),
        # 5 (kernel), 7 (garbage collections); minor page faults at 6, full collections at 8
        parts = (("ms", 1), ("task_ms", 3), ("loop_ms", 4), ("kernel_ms", 5), ("gc_ms", 7))
        for key, i in parts:
            figures[prefix + key] = [1e3 * (c[i] - b[i]) / chunks for b, c in pairs]
        figures[prefix + "faults"] = [(c[6] - b[6]) / chunks for b, c in pairs]
        figures[prefix + "full_gcs"] = [c[8] - b[8] for b, c in pairs]
        figures[prefix + "scheduler_ms"] = [1e3 * (c[9] - b[9]) / chunks for b, c in pairs]
        figures[prefix + "scheduler"] = [c[9] / b[9] for b, c in pairs]
        figures[prefix + "wall"] = [c[0] / b[0] for b, c in pairs]
    return figures


def block_means(values: list[float], blocks: int) -> list[float]:
    """The mean of each block's consecutive share of ``values`` (one per round); none of
    none."""
    if not values:
        return []
    size = len(values) // blocks
    if size * blocks != len(values):
        raise ValueError(f"{len(values)} rounds do not split into {blocks} blocks")
    return [sum(values[b * size : (b + 1) * size]) / size for b in range(blocks)]


def shown(values: list[float], digits: int) -> str:
    """The mean of ``values`` and its 95 % confidence interval; "-" for none."""
    if not values:
        return "-"
    mean, low, high = interval(values)
    return f"{mean:.{digits}f} ({low:.{digits}f} to {high:.{digits}f})"


def report_size(chunksize: int, chunks: int, results: dict[str, dict[str, Any]]) -> None:
    rows, figures = [], {}
    for name, result in results.items():
        if "error" in result:
            rows.append([name, "-", "-", "-", "-", "-", "not measured"])
            continue
        rounds = paired(result, chunks)
        blocks = result.get("blocks", 1)
        # One figure per block: a block's clusters are new worker processes, each with a
        # speed of its own, so blocks, not rounds, are the independent samples.
        figures[name] = {key: block_means(v, blocks) for key, v in rounds.items()}
        if blocks > 1:
            print(
                f"{name}, {blocks} blocks of {len(rounds['cpu']) // blocks} rounds; "
                "workers' CPU at once per block: "
                f"{', '.join(f'{v:.4f}' for v in figures[name]['cpu'])}; over the "
                f"rounds taken as independent: {shown(rounds['cpu'], 4)}"
            )
        collected = result["together"]["collected"]
        wall = median([c[0] for c in collected])
        fixed = median([c[2] for c in collected])
        rows.append(
            [
                f"{name} ({result['version']})",
                shown(figures[name]["wall"], 4),
                shown(figures[name]["cpu"], 4),
                shown(figures[name]["ms"], 2),
                shown(figures[name]["alone_wall"], 4),
                shown(figures[name]["alone_cpu"], 4),
                f"{wall:.2f}",
                f"{1e3 * fixed:.0f} ({100 * fixed / wall:.2f}%)",
            ]
        )
    headers = [
        "collected / bare, over blocks",
        "wall (95% CI)",
        "workers CPU (95% CI)",
        "workers CPU ms per chunk (95% CI)",
        "alone: wall",
        "alone: workers CPU",
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
    cpu = interval(ours["cpu"])
    accepted = ACCEPTED.get(chunksize)
    print(
        f"ours, workers' CPU {cpu[0]:.4f} (95% CI {cpu[1]:.4f}-{cpu[2]:.4f})"
        + (f"; the accepted cost with phases on: about {accepted}" if accepted else "")
    )
    report_parts(results["ours"]["parts"], ours)
    if results["ours"].get("splits"):
        report_split(results["ours"]["splits"], results["ours"]["blocks"], chunks)
    if "scheduler_ms" in ours:
        print(
            "ours, on the scheduler (its event loop thread, not in the workers' figures; "
            f"enter and exit included): {shown(ours['scheduler_ms'], 3)} ms per chunk, "
            f"collected / bare {shown(ours['scheduler'], 3)}"
        )
    theirs = figures.get("0.1.2")
    if theirs is not None:
        theirs_ms, ours_ms = interval(theirs["ms"])[0], interval(ours["ms"])[0]
        if ours_ms > 0:
            print(f"0.1.2's cost per chunk / ours: {theirs_ms / ours_ms:.1f}x")
        else:  # os.times() counts 10 ms ticks: a short run can read no difference at all
            print(f"0.1.2's cost per chunk: {theirs_ms:.2f} ms; ours measured none")


def report_parts(parts: list[dict[str, Any]], ours: dict[str, list[float]]) -> None:
    """The cost per chunk by thread, of the runs at once: the tasks' (Dask's own
    thread-cpu, with what the collected runs measured of themselves), the event loops',
    and the rest."""
    chunks = sum(p["num_chunks"] or 0 for p in parts)
    if not chunks or any(p["instrument_cpu_seconds"] is None for p in parts):
        print("parts: the collected runs did not report their own cost")
        return

    every, tasks, loops = (ours[key] for key in ("ms", "task_ms", "loop_ms"))
    others = [m - t - loop for m, t, loop in zip(every, tasks, loops, strict=True)]
    own = 1e3 * sum(p["instrument_cpu_seconds"] for p in parts) / chunks
    clock = 1e3 * sum(p["phase_clock_seconds"] or 0.0 for p in parts) / chunks
    print(
        f"ours, where a chunk's cost goes (ms per chunk): all {shown(every, 3)}; "
        "in the tasks' threads (Dask's thread-cpu) "
        f"{shown(tasks, 3)}, of which the instrumentation {own:.3f} (its measured thread CPU) and "
        f"the phase clock {clock:.3f} (estimated); in the event loops {shown(loops, 3)}; "
        f"in Dask's other threads {shown(others, 3)}; in the kernel "
        f"{shown(ours['kernel_ms'], 3)}, with {shown(ours['faults'], 1)} more "
        "minor page faults; across threads, in the garbage collector "
        f"{shown(ours['gc_ms'], 3)}, with {shown(ours['full_gcs'], 2)} more full "
        "collections per run"
    )


def report_split(splits: list[dict[str, dict[str, float]]], blocks: int, chunks: int) -> None:
    """Where the wall of the runs at once went, bare and collected side by side: each part
    of :data:`task_stream_split.PARTS` (and the compute of each task prefix) in ms per
    chunk, and collected - bare with its interval over blocks; the parts tile the wall."""
    prefixes = {k for s in splits for v in s.values() for k in v if k.startswith("compute:")}
    rows = []
    for name in [*PARTS, *sorted(prefixes), "wall"]:
        bare = [1e3 * s["bare"].get(name, 0.0) / chunks for s in splits]
        collected = [1e3 * s["collected"].get(name, 0.0) / chunks for s in splits]
        extra = [c - b for b, c in zip(bare, collected, strict=True)]
        rows.append(
            [
                name,
                f"{median(bare):.3f}",
                f"{median(collected):.3f}",
                shown(block_means(extra, blocks), 3),
            ]
        )
    headers = ["wall split (task stream)", "bare ms/chunk", "collected ms/chunk", "extra (95% CI)"]
    print("ours, where the wall of the runs at once went:")
    print(table(headers, rows))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4, help="rounds per block (4)")
    parser.add_argument(
        "--blocks", type=int, default=5, help="blocks of rounds, each on new clusters (5)"
    )
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=list(SIZES), help="chunk sizes to run"
    )
    parser.add_argument("--quick", action="store_true", help="small files, 2 blocks of 2 rounds")
    parser.add_argument(
        "--alone",
        action="store_true",
        help="also run the variants one after the other in every round (checks the runs at once)",
    )
    parser.add_argument(
        "--samples", type=Path, help="write every run's figures, per chunk size, to this JSON file"
    )
    parser.add_argument(
        "--without",
        choices=("phases", "decorator"),
        help="ours without one part: the phase clock (RoastPlugin(phases=False)) or "
        "@track_metrics (the collected variant runs the bare processor); 0.1.2 is not run",
    )
    parser.add_argument(
        "--against",
        choices=("phases",),
        help="the baseline is ours without the phase clock instead of bare: the figures are "
        "the clock's cost side by side; 0.1.2 is not run",
    )
    parser.add_argument(
        "--split",
        action="store_true",
        help="also split each run's wall from Dask's task stream (start-up, compute per task "
        "prefix, between tasks, finish), bare and collected side by side",
    )
    parser.add_argument(
        "--xrootd",
        action="store_true",
        help="read the files as root:// URLs from a local XRootD server (Debian's "
        "xrootd-server), both variants from the same server",
    )
    parser.add_argument("--chunksize", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--datasets", type=int, help=argparse.SUPPRESS)
    child_arguments(parser)
    args = parser.parse_args(argv)
    if args.child:
        return answer_parent(
            RESULT,
            child(
                Plan(
                    args.paths,
                    args.chunksize,
                    args.datasets,
                    args.rounds,
                    args.blocks,
                    args.alone,
                    args.without,
                    args.against,
                    args.split,
                )
            ),
        )

    if not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2:
        parser.error("needs two cores this process may pin its workers to (Linux)")
    from roastcoffea.demo.nanoaod import ensure_files

    sizes = QUICK_SIZES if args.quick else {size: SIZES[size] for size in args.sizes}
    rounds, blocks = (2, 2) if args.quick else (args.rounds, args.blocks)
    pythons = {"ours": sys.executable, "0.1.2": args.rc012_python}
    if args.without and args.against:
        parser.error("--without and --against measure different things: one at a time")
    if args.without or args.against:
        del pythons["0.1.2"]
    by_size: dict[int, dict[str, dict[str, Any]]] = {}
    print(
        f"chunk overhead: {blocks} blocks of {rounds} rounds per chunk size and version; "
        f"{machine()}"
    )
    if args.without:
        part = {"phases": "the phase clock", "decorator": "@track_metrics"}[args.without]
        print(f"ours runs without {part} (--without {args.without})")
    if args.against:
        print(
            "the baseline is ours without the phase clock (--against phases): "
            "collected / bare below reads ours / ours without the clock"
        )
    if args.xrootd:
        print("the files are read as root:// URLs from a local XRootD server (--xrootd)")
    for chunksize, workload in sizes.items():
        events, n_files, _ = workload
        paths = ensure_files(data_dir(events, n_files), events, n_files)
        with contextlib.ExitStack() as server:
            urls = server.enter_context(serve(paths)) if args.xrootd else {}
            files = [urls.get(str(p), str(p)) for p in paths]
            by_size[chunksize] = run_size(args, pythons, files, chunksize, workload, rounds, blocks)
    if args.samples:
        args.samples.write_text(json.dumps(by_size, indent=1))
    return 0


def run_size(
    args: argparse.Namespace,
    pythons: dict[str, str],
    files: list[str],
    chunksize: int,
    workload: tuple[int, int, int],
    rounds: int,
    blocks: int,
) -> dict[str, dict[str, Any]]:
    """Run every version's child on one chunk size and its workload (events, files,
    datasets); report and return their results."""
    events, n_files, datasets = workload
    chunks = datasets * n_files * coffea_chunks(events // n_files, chunksize)
    times = f", read {datasets} times" if datasets > 1 else ""
    print(
        f"\nchunks of {chunksize:,} events: {events:,} events in {n_files} files{times}, "
        f"{chunks} chunks per run",
        flush=True,
    )
    results: dict[str, dict[str, Any]] = {}
    for name, python in pythons.items():
        if not Path(python).exists():
            results[name] = {"error": f"{python} not found (venv not made)"}
            continue
        plan = Plan(
            files,
            chunksize,
            datasets,
            rounds,
            blocks,
            args.alone,
            args.without,
            args.against,
            args.split,
        )
        results[name] = spawn(python, plan)
    report_size(chunksize, chunks, results)
    return results


if __name__ == "__main__":
    raise SystemExit(main())
