"""What reading the thread's CPU clock costs a chunk, by how often the phase clock reads it.

What it measures: real chunks of the demo's synthetic NanoAOD (100,000 events, or
``--chunksize``), run as coffea's work function runs them (``bench/phase_cost.py``'s
``work``), with the phase hooks installed throughout, in four variants one after the
other on the same chunk, the order rotating from one round over the chunks to the next:

- ``idle``: no sink, so no clock (each hooked call is a thread-local lookup);
- ``every switch``: the clock reads the thread's CPU clock (``CLOCK_THREAD_CPUTIME_ID``,
  a system call) at every phase switch (``TaskPhases(cpu_interval=0)``), as it did before
  2026-11-26;
- ``worker``: the worker's clock (``TaskPhases()``): the CPU clock read at most once per
  millisecond, as a call that may wait starts (a get from an empty queue of uproot's
  chunks, an opaque call) and as a stretch the thread may have waited in ends, if it lasted
  50 µs or more;
- ``10 ms``: the same, at most once per 10 ms.

Each active variant also runs the worker plugin's end of task (``digest_task_phases``).
Per chunk: the thread's CPU time (``time.thread_time``, garbage collector off inside the
timed run), each active variant minus ``idle`` in the same rotation, with a 95 %
confidence interval over the chunks run; the kernel's part of that difference and the
difference in the thread's minor page faults (``getrusage(RUSAGE_THREAD)``: a fault costs
the kernel a microsecond or two, and what a variant leaves allocated moves where the
allocator faults); and each variant's CPU clock reads and ``cpu_split_bound`` (the bound of
the error of its per-phase CPU). Then each phase's CPU per chunk in every variant, beside
``every switch``, whose per-phase CPU is exact: how far the split lands from it. Run it
under a Dask worker's allocator settings with ``MALLOC_TRIM_THRESHOLD_=65536``
(``distributed.nanny.pre-spawn-environ``). Nothing is asserted.

Run: ``.venv/bin/python bench/cpu_clock_cost.py --seconds 300``.
"""

from __future__ import annotations

import argparse
import functools
import gc
import resource
import time

from common import interval, parse_chunk_bench, phase_hooks, table
from phase_cost import work

from roastcoffea import _native
from roastcoffea.instrument import phases
from roastcoffea.phase_vocabulary import PHASES
from roastcoffea.plugin.worker.phases import digest_task_phases

#: The variants: None is the idle hooks, a number the clock's cpu_interval.
VARIANTS = {
    "idle": None,
    "every switch": 0.0,
    "worker": phases.CPU_INTERVAL,
    "10 ms": 10e-3,
}


def timed(chunk: tuple, cpu_interval: float | None, clocks: list) -> tuple[float, float, int]:
    """Thread CPU seconds of one chunk in a variant, the kernel's part of them and the
    thread's minor page faults; its clock's counts appended to ``clocks``."""
    if cpu_interval is not None:
        phases.set_sink(functools.partial(keep, clocks), cpu_interval=cpu_interval)
    gc.collect()
    gc.disable()
    try:
        before = resource.getrusage(resource.RUSAGE_THREAD)
        t0 = time.thread_time()
        phases.run_task(work, chunk, {})
        cpu = time.thread_time() - t0
        after = resource.getrusage(resource.RUSAGE_THREAD)
        return cpu, after.ru_stime - before.ru_stime, after.ru_minflt - before.ru_minflt
    finally:
        gc.enable()
        phases.set_sink(None)


def keep(clocks: list, task: _native.TaskPhases) -> None:
    """The sink: the worker plugin's end of task, then the clock's counts kept (not the
    clock: its baskets hold the file, whose freeing belongs in the timed run)."""
    digest_task_phases(task)
    clocks.append((task.cpu_reads, task.cpu_split_bound, task.cpu))


def more_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seconds", type=float, default=300.0, help="time to run (300)")


def main(argv: list[str] | None = None) -> int:
    args, directory, ranges = parse_chunk_bench(__doc__, 8, argv, more_arguments)
    names = list(VARIANTS)
    extra: dict[str, list[float]] = {name: [] for name in names[1:]}
    kernel: dict[str, list[float]] = {name: [] for name in names[1:]}
    faults: dict[str, list[float]] = {name: [] for name in names[1:]}
    clocks: dict[str, list] = {name: [] for name in names[1:]}
    with phase_hooks(lambda task: None):
        for chunk in ranges[:2]:  # warm-up: imports, caches
            phases.run_task(work, chunk, {})
        idle, rounds = [], 0
        deadline = time.monotonic() + args.seconds
        while time.monotonic() < deadline:
            rounds += 1
            for i, chunk in enumerate(ranges):
                first = (rounds + i) % len(names)
                order = names[first:] + names[:first]
                cpu = {name: timed(chunk, VARIANTS[name], clocks.get(name, [])) for name in order}
                idle.append(cpu["idle"][0])
                for name in names[1:]:
                    extra[name].append(1e3 * (cpu[name][0] - cpu["idle"][0]))
                    kernel[name].append(1e3 * (cpu[name][1] - cpu["idle"][1]))
                    faults[name].append(cpu[name][2] - cpu["idle"][2])

    print(
        f"CPU clock cost: {rounds} rounds over {len(ranges)} chunks of "
        f"{args.chunksize:,} events, demo NanoAOD in {directory}; idle chunk "
        f"{1e3 * sum(idle) / len(idle):.1f} ms of thread CPU"
    )
    rows = []
    for name in names[1:]:
        mean, low, high = interval(extra[name])
        done = clocks[name]
        reads = sum(reads for reads, _, _ in done) / len(done)
        bound = 1e3 * sum(bound for _, bound, _ in done) / len(done)
        in_kernel, k_low, k_high = interval(kernel[name])
        rows.append(
            [
                name,
                f"{mean:.3f}",
                f"{low:.3f} to {high:.3f}",
                f"{in_kernel:.3f}",
                f"{k_low:.3f} to {k_high:.3f}",
                f"{sum(faults[name]) / len(faults[name]):+.0f}",
                f"{reads:.0f}",
                f"{bound:.3f}",
            ]
        )
    headers = ["variant", "- idle, ms", "95% CI", "of it kernel", "95% CI", "page faults"]
    print(table([*headers, "CPU reads", "split bound, ms"], rows))
    print()
    print(phase_table(clocks))
    return 0


def phase_table(clocks: dict[str, list]) -> str:
    """Each phase's mean CPU per chunk (ms) by variant, and its distance from the exact one."""
    means = {
        name: {
            phase: 1e3 * sum(cpu.get(phase, 0.0) for _, _, cpu in done) / len(done)
            for phase in PHASES
        }
        for name, done in clocks.items()
    }
    exact = means["every switch"]
    rows = [
        [phase, *(f"{means[name][phase]:.3f}" for name in means)]
        + [f"{means[name][phase] - exact[phase]:+.3f}" for name in list(means)[1:]]
        for phase in PHASES
    ]
    others = list(means)[1:]
    headers = ["phase CPU per chunk, ms", *means, *(f"{name} - every switch" for name in others)]
    return table(headers, rows)


if __name__ == "__main__":
    raise SystemExit(main())
