"""What measuring uproot's executor pools costs a chunk read on them.

What it measures: one chunk of the demo's generator output compressed with LZMA (where
decompression dominates), read by ``NanoEventsFactory.from_root`` with one pool of two
threads as its ``decompression_executor`` and ``interpretation_executor``; the Jet, Muon
and Electron transverse momenta are summed. The function is a ``track_phases`` task in
this process, with the phase hooks installed; each pair of runs reads the chunk measured
(a sink set: the task's clock runs and every call on the pool runs under a helper clock)
and unmeasured (no sink: the hooks pass every call on), in alternating order; then the
same with uproot's in-thread executors, the phase clock's usual cost. The figure is the
ratio of the process's CPU (``time.process_time``, the pool's threads included) per pair,
and beside it the cost of one helper call's bookkeeping (its clock, its addition to the
task's, the count of calls pending) in a warm loop. Nothing is asserted.

Run: ``.venv/bin/python bench/chunk_helper_threads.py`` (about 4 minutes).
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from common import data_dir, iqr, machine, table

EVENTS, BASKET = 20000, 2500


class InThread:
    """An executor that runs each call in the submitting thread."""

    def submit(self, fn: Any, *args: Any) -> Any:
        return fn(*args)


def lzma_file() -> str:
    from roastcoffea.demo.nanoaod import generate

    directory = data_dir(EVENTS, 1).with_name(f"lzma-{EVENTS}")
    files = sorted(directory.glob("*.root")) or generate(
        directory, EVENTS, 1, compression="lzma:9", basket_events=BASKET, processes=1
    )
    return str(files[0])


def helper_call_seconds(calls: int = 100_000, repeats: int = 7) -> float:
    """One helper call's bookkeeping around a no-op, the fastest of ``repeats`` rounds."""
    from roastcoffea import _native
    from roastcoffea.instrument._helpers import HelperRuns

    runs, executor = HelperRuns(_native.TaskPhases()), InThread()

    def noop() -> None:
        pass

    best = {"bare": float("inf"), "helper": float("inf")}
    for _ in range(repeats):
        for kind in best:
            t0 = time.perf_counter()
            for _ in range(calls):
                noop() if kind == "bare" else runs.submit(executor, noop, (), {})
            best[kind] = min(best[kind], (time.perf_counter() - t0) / calls)
    return best["helper"] - best["bare"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=120, help="measured/unmeasured pairs (120)")
    parser.add_argument("--quick", action="store_true", help="20 pairs")
    args = parser.parse_args()
    pairs = 20 if args.quick else args.pairs
    warnings.filterwarnings("ignore", module="coffea")

    import awkward as ak
    from coffea.nanoevents import NanoAODSchema, NanoEventsFactory

    from roastcoffea.demo.nanoaod import TREE
    from roastcoffea.instrument import _phase_hooks, phases

    NanoAODSchema.warn_missing_crossrefs = False
    path = lzma_file()
    finished: list[Any] = []
    pool = ThreadPoolExecutor(2)
    calls = 0

    def read(executor: Any) -> float:
        events = NanoEventsFactory.from_root(
            {path: TREE},
            mode="virtual",
            schemaclass=NanoAODSchema,
            decompression_executor=executor,
            interpretation_executor=executor,
        ).events()
        return float(sum(ak.sum(events[name].pt) for name in ("Jet", "Muon", "Electron")))

    task = phases.track_phases(read)
    _phase_hooks.install()
    ratios: dict[str, list[float]] = {"pool": [], "thread": []}
    unmeasured: list[float] = []
    for executor, arm in ((pool, "pool"), (None, "thread")):
        task(executor)  # warm: imports, the file's pages
        for i in range(pairs):
            seconds = {}
            for measured in (True, False) if i % 2 else (False, True):
                phases.set_sink(finished.append if measured else None)
                t0 = time.process_time()
                task(executor)
                seconds[measured] = time.process_time() - t0
            ratios[arm].append(seconds[True] / seconds[False])
            if arm == "pool":
                unmeasured.append(seconds[False])
                calls = finished[-1].helper_runs
    phases.set_sink(None)
    pool.shutdown()
    per_call = helper_call_seconds()
    print(f"chunk helper threads: {machine()}")
    print(f"one chunk of {EVENTS:,} events (LZMA 9), {pairs} pairs per arm")
    rows = [
        (label, f"{statistics.median(ratios[arm]):.4f}", iqr(ratios[arm], 4))
        for arm, label in (
            ("pool", "a pool of 2 threads"),
            ("thread", "uproot's in-thread executors"),
        )
    ]
    print(table(("measured / unmeasured, process CPU", "median", "IQR"), rows))
    print(
        f"helper calls per chunk: {calls}; one call's bookkeeping (warm loop): "
        f"{per_call * 1e6:.2f} us, {calls * per_call * 1e3:.3f} ms of the chunk's "
        f"{statistics.median(unmeasured) * 1e3:.1f} ms of process CPU (median, unmeasured)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
