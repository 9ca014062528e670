"""What the phase clock costs a chunk, measured two ways in one process.

What it measures: for real chunks of the demo's synthetic NanoAOD (100,000 events, or
``--chunksize``), run as
coffea's work function runs them (``uproot.open``, ``NanoEventsFactory.from_root`` in
virtual mode, ``events()``, the demo processor's ``process``), the cost of the phase hooks
(:mod:`roastcoffea.instrument._phase_hooks`):

1. side by side: each chunk twice in a row, once with the hooks installed and measuring
   and once without, the order alternating; the ratio of the two wall times per pair;
2. directly: the clock's own estimate of its cost in the chunk (counted in a separate
   pass: its hooked calls of each kind, switching phase, nested in their own phase or
   passing inside an opaque one, times the cost of that kind, a hooked no-op timed
   against the bare no-op when the hooks are installed), plus the
   worker plugin's end-of-task work (``digest_task_phases``: closing the sum and about
   thirty ``context_meter`` digests; outside a worker it sends no record), over the
   chunk's time. This one does not drown in the machine's noise.

The figures are medians over chunks and repeats; nothing is asserted.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import uproot
from common import median, parse_chunk_bench, phase_hooks, spread_table
from workload import chunk_events

from roastcoffea import _native
from roastcoffea._native import PhaseHook
from roastcoffea.demo.analysis import DemoProcessor
from roastcoffea.instrument import _phase_hooks, phases
from roastcoffea.instrument.phases import TaskPhases, clock_seconds
from roastcoffea.plugin.phases import digest_task_phases


def work(path: Path, start: int, stop: int) -> None:
    """One chunk as coffea's work function runs it, with the demo's processor."""
    with uproot.open({str(path): None}) as file:
        events = chunk_events(file, str(path), start, stop)
        DemoProcessor.process.__wrapped__(DemoProcessor(), events)  # type: ignore[attr-defined]


def timed_chunk(path: Path, start: int, stop: int, hooked: bool) -> float:
    with phase_hooks(lambda task: None) if hooked else contextlib.nullcontext():
        t0 = time.perf_counter()
        phases.run_task(work, (path, start, stop), {})
        return time.perf_counter() - t0


def clock_of(path: Path, start: int, stop: int) -> TaskPhases:
    """The finished clock of one chunk: its hooked calls and their estimated cost."""
    finished: list[TaskPhases] = []
    with phase_hooks(finished.append):
        phases.run_task(work, (path, start, stop), {})
    (task,) = finished
    return task


def us_per_task_end(loops: int) -> float:
    """The end-of-task work of the worker plugin, in µs per task."""
    task = TaskPhases()
    # One decompression in the task, so its digests include a codec's.
    decompress = PhaseHook(lambda codec, data: bytes(4 * len(data)), "decompress", codec="ZLIB")
    _native.set_current_task(task)
    try:
        decompress(None, bytes(1000))
    finally:
        _native.set_current_task(None)
    t0 = time.perf_counter_ns()
    for _ in range(loops):
        digest_task_phases(task)
    return (time.perf_counter_ns() - t0) / loops / 1e3


def main(argv: list[str] | None = None) -> int:
    args, directory, ranges = parse_chunk_bench(__doc__, 8, argv)
    timed_chunk(*ranges[0], hooked=False)  # warm-up: imports, caches

    with_ms, without_ms, ratios = [], [], []
    for round_ in range(args.repeats):
        for i, chunk in enumerate(ranges):
            first = (round_ + i) % 2 == 0
            a = timed_chunk(*chunk, hooked=first)
            b = timed_chunk(*chunk, hooked=not first)
            hooked, bare = (a, b) if first else (b, a)
            with_ms.append(1e3 * hooked)
            without_ms.append(1e3 * bare)
            ratios.append(hooked / bare)
    clocks = [clock_of(*chunk) for chunk in ranges]
    switch_ns, nested_ns, passed_ns, read_ns = (1e9 * cost for cost in _phase_hooks.calibrate())
    end_us = us_per_task_end(20_000)
    cost_ms = [1e3 * clock_seconds(clock) + end_us / 1e3 for clock in clocks]
    direct = [cost / median(without_ms) for cost in cost_ms]

    print(
        f"phase cost: {len(ranges)} chunks of {args.chunksize:,} events x {args.repeats} "
        f"repeats, demo NanoAOD in {directory}"
    )
    counts = {
        kind: sorted(getattr(clock, kind) for clock in clocks)
        for kind in ("switches", "nested", "passed", "cpu_reads")
    }
    print(
        "hooked calls per chunk: "
        + ", ".join(f"{c[0]:,} to {c[-1]:,} {kind}" for kind, c in counts.items())
    )
    print(
        f"one hooked call, beyond the bare call: {switch_ns:.0f} ns switching phase, "
        f"{nested_ns:.0f} ns nested in its own phase, {passed_ns:.0f} ns inside an opaque one; "
        f"a read of the thread's CPU clock {read_ns:.0f} ns"
    )
    print(f"end of a task (digests): {end_us:.1f} us")
    print()
    rows = [
        ("with the phase clock, ms", with_ms, 1),
        ("without, ms", without_ms, 1),
        ("with / without, paired", ratios, 4),
        ("direct cost, ms", cost_ms, 3),
        ("direct cost / chunk", direct, 5),
    ]
    print(spread_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
