"""Runs the benchmarks of bench/ in turn and prints their figures (`make bench`).

All but exit_latency.py, which compares against roastcoffea 0.1.2 in a venv of its own
(docs/performance.md says how to make it); collector_overhead.py measures 0.1.2 beside ours
when that venv exists, and says so when it does not.

Each benchmark runs in its own Python process (the same interpreter), so a cluster or a
large aggregator of one never weighs on the next. `--quick` is passed through for a short
run. Benchmarks print figures and never assert timings; the exit status is non-zero only
when a benchmark script itself fails.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

BENCHMARKS = (
    "hook_cost.py",
    "scheduler_overhead.py",
    "flush_latency.py",
    "series_memory.py",
    "collector_overhead.py",
    "consecutive_runs.py",
    "chunk_cost.py",
    "chunk_instructions.py",
    "worker_instructions.py",
    "instrument_cost.py",
    "range_bytes.py",
    "phase_cost.py",
    "insitu_cost.py",
    "worker_parts.py",
    "scale.py",
    "measurement_scale.py",
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short runs of every benchmark")
    parser.add_argument("only", nargs="*", help="run only these (e.g. hook_cost)")
    args = parser.parse_args(argv)
    here = Path(__file__).resolve().parent
    chosen = [b for b in BENCHMARKS if not args.only or b.removesuffix(".py") in args.only]
    failed = []
    for name in chosen:
        command = [sys.executable, str(here / name), *(["--quick"] if args.quick else [])]
        print(f"$ {' '.join(command)}", flush=True)
        t0 = time.perf_counter()
        status = subprocess.call(command, cwd=here.parent)
        print(f"({name}: {time.perf_counter() - t0:.0f} s, exit status {status})\n", flush=True)
        if status:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
