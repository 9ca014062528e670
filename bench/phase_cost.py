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
   chunk's time. This one does not drown in the machine's noise;
3. counted: the Python functions and C functions called from Python that the clock adds
   to one chunk (``sys.setprofile`` over the chunk run without the clock, then with it,
   warm), by function: what of the clock is not native;
4. each kind of hooked call warm (in a loop, as the estimate's calibration times it) and
   cold (an 8 MiB array touched between calls, as a chunk's array work leaves the caches):
   a switch with and without a read of the CPU clock, uproot's ``Chunk.wait`` for bytes
   from the source and for bytes in memory (real uproot chunks), a get of a chunk already
   in uproot's reader queue, awkward's ``materialize`` of a virtual array being built and of
   one built, the basket log.

The figures are medians over chunks and repeats; nothing is asserted.
"""

from __future__ import annotations

import collections
import contextlib
import sys
import time
from pathlib import Path

import uproot
from common import median, parse_chunk_bench, phase_hooks, spread_table, table
from workload import chunk_events

from roastcoffea import _native
from roastcoffea._native import PhaseHook
from roastcoffea.demo.analysis import DemoProcessor
from roastcoffea.instrument import _phase_hooks, phases
from roastcoffea.instrument.phases import TaskPhases, clock_seconds
from roastcoffea.plugin.worker.phases import digest_task_phases


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


def calls_of(path: Path, start: int, stop: int, measured: bool) -> collections.Counter:
    """The Python and C calls of one chunk, by function, with the hooks installed and the
    clock measuring or idle."""
    calls: collections.Counter = collections.Counter()

    def count(frame: object, event: str, arg: object) -> None:
        if event == "call":
            code = frame.f_code  # type: ignore[attr-defined]
            calls[f"{Path(code.co_filename).name}:{code.co_name}"] += 1
        elif event == "c_call":
            calls[getattr(arg, "__qualname__", repr(arg))] += 1

    with phase_hooks(lambda task: None):
        if not measured:
            phases.set_sink(None)
        sys.setprofile(count)
        try:
            phases.run_task(work, (path, start, stop), {})
        finally:
            sys.setprofile(None)
    return calls


def added_calls(chunk: tuple[Path, int, int]) -> tuple[int, collections.Counter]:
    """The calls of ``chunk`` without the clock and those the clock adds, by function
    (after a warm run of each)."""
    for measured in (False, True):
        calls_of(*chunk, measured)
    idle, measured = calls_of(*chunk, False), calls_of(*chunk, True)
    measured.subtract(idle)
    return sum(idle.values()), measured


def hook_costs_ns(loops: int) -> list[tuple[str, float, float]]:
    """What each kind of hooked call adds to the call it wraps, in ns, with a clock current:
    (kind, warm, cold). Warm: called in a loop; cold: with an 8 MiB array touched between
    calls, as a chunk's array work leaves the caches. Each against the same call unhooked."""
    import queue
    from concurrent.futures import Future

    import numpy
    from awkward._nplikes.numpy import Numpy
    from uproot.source.chunk import Chunk
    from uproot.source.cursor import Cursor
    from uproot.source.futures import TrivialFuture

    lines = numpy.zeros(1 << 20)  # 8 MiB
    every_line = numpy.arange(0, lines.size, 8)
    data = bytes(64)

    def arrived() -> Future:
        future: Future = Future()
        future.set_result(data)
        return future

    class Basket:
        def __init__(self) -> None:
            self._members = {"fNbytes": 60, "fObjlen": 100, "fKeylen": 40}
            self._file = None
            self._cursor = Cursor(1000)

        def read_members(self) -> None:
            pass

    def noop(_: object) -> None:
        pass

    def queued() -> queue.Queue:
        chunks: queue.Queue = queue.Queue()
        chunks.put(data)
        return chunks

    virtual = _phase_hooks._virtual_array()

    def unbuilt() -> object:
        return virtual(Numpy.instance(), (8,), numpy.float64, lambda: lines[:8])

    def built() -> object:
        array = unbuilt()
        array.materialize()  # type: ignore[attr-defined]
        return array

    def per_call(call: object, arguments: list, cold: bool) -> float:
        total = 0
        for argument in arguments:
            if cold:
                lines[every_line] += 1.0
            t0 = time.perf_counter_ns()
            call(argument)  # type: ignore[operator]
            total += time.perf_counter_ns() - t0
        return total / len(arguments)

    kinds = [  # (kind, bare call, hooked call, argument maker, the clock's cpu_interval)
        ("switch", noop, PhaseHook(noop, "interpret"), object, float("inf")),
        ("switch reading the CPU clock", noop, PhaseHook(noop, "interpret"), object, 0.0),
        (
            "wait for the source",
            Chunk.wait,
            _phase_hooks._wait(Chunk.wait),
            lambda: Chunk(None, 0, len(data), arrived()),
            float("inf"),
        ),
        (
            "wait, bytes in memory",
            Chunk.wait,
            _phase_hooks._wait(Chunk.wait),
            lambda: Chunk(None, 0, len(data), TrivialFuture(data)),
            float("inf"),
        ),
        (
            "get of a chunk already queued",
            queue.Queue.get,
            _phase_hooks._ReadQueue.get,
            queued,
            float("inf"),
        ),
        (
            "virtual array being built",
            virtual.materialize,
            _phase_hooks._materialize(virtual.materialize),
            unbuilt,
            float("inf"),
        ),
        (
            "virtual array built, passed on",
            virtual.materialize,
            _phase_hooks._materialize(virtual.materialize),
            built,
            float("inf"),
        ),
        (
            "basket logged",
            Basket.read_members,
            _phase_hooks._basket(Basket.read_members),
            Basket,
            float("inf"),
        ),
    ]
    costs = []
    for kind, bare, hooked, make, cpu_interval in kinds:
        cost = []
        for cold in (False, True):
            rounds = []
            for _ in range(5):
                unhooked = per_call(bare, [make() for _ in range(loops)], cold)
                _native.set_current_task(TaskPhases(cpu_interval=cpu_interval))
                try:
                    rounds.append(per_call(hooked, [make() for _ in range(loops)], cold) - unhooked)
                finally:
                    _native.set_current_task(None)
            cost.append(median(rounds))
        costs.append((kind, *cost))
    return costs


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
    print()
    idle, added = added_calls(ranges[0])
    more = sum(added.values())
    print(
        f"calls in the first chunk: {idle:,} without the clock, {more:+,} with it "
        f"({100 * more / idle:.2f}%); the clock's, by function:"
    )
    print(
        table(
            ["function", "calls"],
            [[name, f"{n:+,}"] for name, n in added.most_common() if n][:16],
        )
    )
    print("\none hooked call, beyond the bare call, warm and cold, ns:")
    rows = [[kind, f"{warm:.0f}", f"{cold:.0f}"] for kind, warm, cold in hook_costs_ns(400)]
    print(table(["hooked call", "warm", "cold"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
