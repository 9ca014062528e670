"""The fixed cost monitoring adds to a chunk, its parts side by side in one process, 95 % CIs.

What it measures: demo chunks (the ``Analysis`` processor of ``bench/workload.py`` on the
demo's synthetic NanoAOD, each chunk opened as coffea's work function opens it:
``uproot.open``, ``NanoEventsFactory.from_root`` in virtual mode with an access log,
``events()``, ``process``). The phase hooks are installed once, at start, as on a Dask
worker; each chunk then runs four times, the order turning from chunk to chunk:

- bare: the undecorated processor outside a measured task (the hooks idle: each hooked call
  looks up the thread's task, finds none and passes the call on);
- ``@track_metrics`` alone: the decorated processor (its record goes to the local queue,
  encoded, as the worker plugin encodes it), no task clock;
- phase clock alone: the undecorated processor in a measured task (``run_task``), with the
  worker plugin's end-of-task work (``digest_task_phases``);
- monitored: both, as on a worker with the plugin.

One process for all four: two processes differ by a percent or two in speed for reasons of
their own (memory layout), and installing and removing the hooks between runs would throw
away the interpreter's specialised code in every variant. What the idle hooks cost the bare
run is estimated apart: their calls per chunk times the time of an idle hooked call.

A run's cost is its thread's CPU time (``time.thread_time``); the garbage collector runs
before each run and is paused during it (coffea's garbage costs several ms of collection per
1,000-event chunk, landing on any run at random). Each figure is the mean of the
differences between a run and the bare run of the same chunk and round, with its 95 %
confidence interval (Student's t), and their median with its distribution-free 95 %
interval (order statistics: it holds for the heavy tails the machine's noise gives the
differences, where the t interval is only approximate). Beside them,
from the monitored runs themselves: the instrumentation's thread CPU (``instrument_cpu_s`` of
the record) and the phase clock's estimate of its own cost (``clock_seconds``). Target:
<= 1 ms per chunk. ``--variants monitored`` runs only bare and monitored (twice as many
pairs in the same time). Nothing is asserted; the script prints figures.
"""

from __future__ import annotations

import argparse
import gc
import json
import time
import timeit
from collections.abc import Callable
from pathlib import Path

import uproot
from common import (
    interval,
    median,
    median_interval,
    parse_chunk_bench,
    phase_hooks,
    table,
    verdict,
)
from workload import Analysis, BareAnalysis, chunk_events

from roastcoffea._native import PhaseHook
from roastcoffea.instrument import phases
from roastcoffea.plugin.worker.phases import digest_task_phases
from roastcoffea.records import drain_local_records

TARGET_MS = 1.0


def options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--raw", type=Path, help="write every run's thread CPU (ms) as JSON")
    parser.add_argument(
        "--variants",
        type=lambda text: text.split(","),
        default=["@track_metrics alone", "phase clock alone", "monitored"],
        help="the runs beside bare, comma-separated (all three)",
    )


Chunk = tuple[Path, int, int]


def work(processor: Analysis | BareAnalysis, path: Path, start: int, stop: int) -> None:
    """One chunk as coffea's work function runs it."""
    with uproot.open({str(path): None}) as file:
        processor.process(chunk_events(file, str(path), start, stop))


def thread_cpu(run: Callable[[], object]) -> float:
    """The thread CPU seconds of ``run()``, the garbage collector paused."""
    gc.collect()
    gc.disable()
    try:
        c0 = time.thread_time()
        run()
        return time.thread_time() - c0
    finally:
        gc.enable()


def variants(chunk: Chunk) -> dict[str, Callable[[], object]]:
    """The four runs of a chunk, by name."""
    return {
        "bare": lambda: work(BareAnalysis(), *chunk),
        "@track_metrics alone": lambda: work(Analysis(), *chunk),
        "phase clock alone": lambda: phases.run_task(work, (BareAnalysis(), *chunk), {}),
        "monitored": lambda: phases.run_task(work, (Analysis(), *chunk), {}),
    }


def idle_hook_seconds() -> float:
    """What one hooked call costs outside a measured task, over the bare call."""
    noop = lambda: None  # noqa: E731
    hooked = PhaseHook(noop, "read")
    calls = 200_000
    return max(
        min(timeit.repeat(hooked, number=calls, repeat=5)) / calls
        - min(timeit.repeat(noop, number=calls, repeat=5)) / calls,
        0.0,
    )


class Runs:
    """Every run's thread CPU, in order."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.chunks: list[int] = []
        self.cpu_ms: list[float] = []

    def add(self, name: str, chunk: int, seconds: float) -> None:
        self.names.append(name)
        self.chunks.append(chunk)
        self.cpu_ms.append(1e3 * seconds)

    def extra_ms(self, name: str) -> list[float]:
        """Each run of ``name`` over the bare run of the same chunk and round."""
        bare: dict[int, list[float]] = {}
        runs: dict[int, list[float]] = {}
        for run, chunk, value in zip(self.names, self.chunks, self.cpu_ms, strict=True):
            if run in ("bare", name):
                (bare if run == "bare" else runs).setdefault(chunk, []).append(value)
        return [r - b for c in runs for r, b in zip(runs[c], bare[c], strict=True)]


def main(argv: list[str] | None = None) -> int:
    args, directory, ranges = parse_chunk_bench(__doc__, 100, argv, options)
    clocks: list[phases.TaskPhases] = []

    def sink(task: phases.TaskPhases) -> None:
        digest_task_phases(task)
        clocks.append(task)

    names = ["bare", *(n for n in variants(ranges[0]) if n != "bare" and n in args.variants)]
    own_ms: list[float] = []
    monitored: list[phases.TaskPhases] = []
    with phase_hooks(sink):
        for run in variants(ranges[0]).values():
            run()  # warm-up: imports, page cache, the tree index
        runs = Runs()
        for round_ in range(args.repeats):
            for i, chunk in enumerate(ranges):
                chunk_runs = variants(chunk)
                turn = (round_ + i) % len(names)
                for name in names[turn:] + names[:turn]:
                    drain_local_records()
                    clocks.clear()
                    runs.add(name, i, thread_cpu(chunk_runs[name]))
                    if name == "monitored":
                        own_ms += [1e3 * r["instrument_cpu_s"] for r in drain_local_records()]
                        monitored += clocks
    if args.raw:
        args.raw.write_text(json.dumps(vars(runs)))
    hooked_calls = [task.switches + task.nested + task.passed for task in monitored]
    idle_ms = 1e3 * idle_hook_seconds() * median(hooked_calls) if monitored else 0.0

    print(
        f"chunk cost: {len(ranges)} chunks of {args.chunksize:,} events x {args.repeats} "
        f"repeats, demo NanoAOD in {directory}"
    )
    rows = []
    for name in names[1:]:
        extra = runs.extra_ms(name)
        mean, low, high = interval(extra)
        middle, m_low, m_high = median_interval(extra)
        rows.append(
            [
                f"{name} - bare",
                f"{mean:.3f}",
                f"{low:.3f} to {high:.3f}",
                f"{middle:.3f}",
                f"{m_low:.3f} to {m_high:.3f}",
            ]
        )
    if monitored:
        clock_ms = [1e3 * phases.clock_seconds(task) for task in monitored]
        rows += [
            ["monitored: instrumentation (its records)", f"{interval(own_ms)[0]:.3f}", "", "", ""],
            ["monitored: phase clock (its estimate)", f"{interval(clock_ms)[0]:.3f}", "", "", ""],
            [f"bare: idle hooks ({median(hooked_calls):.0f} calls)", f"{idle_ms:.3f}", "", "", ""],
        ]
    print()
    headers = ["thread CPU per chunk, ms", "mean", "95% CI", "median", "95% CI"]
    print(table(headers, rows))
    if "monitored" in names:
        extra = runs.extra_ms("monitored")
        for label, high in (
            ("mean", interval(extra)[2] + idle_ms),
            ("median", median_interval(extra)[2] + idle_ms),
        ):
            print(
                f"\nfixed cost per chunk ({label}), upper end of its 95% CI with the idle hooks: "
                f"{high:.3f} ms, target <= {TARGET_MS} ms: {verdict(high <= TARGET_MS)}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
