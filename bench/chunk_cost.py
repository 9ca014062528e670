"""The fixed cost monitoring adds to one chunk, side by side in one process, with a 95 % CI.

What it measures: demo chunks (the ``Analysis`` processor of ``bench/workload.py`` on the
demo's synthetic NanoAOD, each chunk opened as coffea's work function opens it:
``uproot.open``, ``NanoEventsFactory.from_root`` in virtual mode with an access log,
``events()``, ``process``), each run twice in a row:

- bare: the undecorated processor, no hooks;
- monitored: ``@track_metrics`` (its record goes to the local queue, encoded, as the worker
  plugin encodes it), the phase hooks installed and measuring, and the worker plugin's
  end-of-task work on the clock (``digest_task_phases``).

The order alternates from pair to pair. A run's cost is the thread's CPU time
(``time.thread_time``). The garbage collector is paused during a pair and run between
pairs: its pauses depend on the heap, not on the chunk (coffea's garbage costs several ms
of collection per 1,000-event chunk, more than the effect measured), and it would land on
one run of the pair at random. The figure is the mean of the per-pair differences with
its 95 % confidence interval (Student's t); beside it, from the monitored runs themselves:
the instrumentation's thread CPU (``instrument_cpu_s`` of the record), the phase clock's
estimated cost (``clock_seconds``), and the rest. Target: <= 1 ms per chunk. Nothing is
asserted; the script prints figures.
"""

from __future__ import annotations

import gc
import time
from pathlib import Path

import uproot
from common import interval, parse_chunk_bench, phase_hooks, table, verdict
from workload import Analysis, BareAnalysis, chunk_events

from roastcoffea.instrument import phases
from roastcoffea.plugin.phases import digest_task_phases
from roastcoffea.records import drain_local_records

TARGET_MS = 1.0


def work(processor: Analysis | BareAnalysis, path: Path, start: int, stop: int) -> None:
    """One chunk as coffea's work function runs it."""
    with uproot.open({str(path): None}) as file:
        processor.process(chunk_events(file, str(path), start, stop))


class Monitored:
    """Runs chunks with the monitoring on and keeps what each said of its own cost."""

    def __init__(self) -> None:
        self.clocks: list[float] = []

    def sink(self, task: phases.TaskPhases) -> None:
        digest_task_phases(task)
        self.clocks.append(task.clock_seconds())

    def run(self, chunk: tuple[Path, int, int]) -> float:
        with phase_hooks(self.sink):
            c0 = time.thread_time()
            phases.run_task(work, (Analysis(), *chunk), {})
            return time.thread_time() - c0


def bare(chunk: tuple[Path, int, int]) -> float:
    c0 = time.thread_time()
    work(BareAnalysis(), *chunk)
    return time.thread_time() - c0


def main(argv: list[str] | None = None) -> int:
    args, directory, ranges = parse_chunk_bench(__doc__, 100, argv)
    monitored = Monitored()
    bare(ranges[0])  # warm-up: imports, page cache, the tree index
    monitored.run(ranges[0])
    monitored.clocks.clear()
    drain_local_records()

    extra_ms: list[float] = []
    for round_ in range(args.repeats):
        for i, chunk in enumerate(ranges):
            gc.collect()
            gc.disable()
            try:
                if (round_ + i) % 2 == 0:
                    plain, watched = bare(chunk), monitored.run(chunk)
                else:
                    watched, plain = monitored.run(chunk), bare(chunk)
            finally:
                gc.enable()
            extra_ms.append(1e3 * (watched - plain))
    records = drain_local_records()
    own_ms = [1e3 * r["instrument_cpu_s"] for r in records]
    clock_ms = [1e3 * s for s in monitored.clocks]

    print(
        f"chunk cost: {len(ranges)} chunks of {args.chunksize:,} events x {args.repeats} "
        f"repeats, demo NanoAOD in {directory}"
    )
    mean, low, high = interval(extra_ms)
    own, clock = interval(own_ms)[0], interval(clock_ms)[0]
    rows = [
        ["monitored - bare, thread CPU", f"{mean:.3f}", f"{low:.3f} to {high:.3f}"],
        ["  instrumentation (its records)", f"{own:.3f}", ""],
        ["  phase clock (its estimate)", f"{clock:.3f}", ""],
        ["  the rest", f"{mean - own - clock:.3f}", ""],
    ]
    print()
    print(table(["per chunk, ms", "mean", "95% CI"], rows))
    print(
        f"\nfixed cost per chunk, upper end of the 95% CI: {high:.3f} ms, "
        f"target <= {TARGET_MS} ms: {verdict(high <= TARGET_MS)}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
