"""Runs every benchmark of bench/ in turn and prints its figures (`make bench`).

The benchmarks are grouped by the question they answer, in the order of
docs/performance.md; a script's name starts with its question. Those that compare against
roastcoffea 0.1.2 (chunk_overhead.py, exit_latency.py) run it from the venv that
`make bench-0.1.2` makes, and say so when it is missing.

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

#: question (a section of docs/performance.md or docs/scale.md) -> its benchmarks
QUESTIONS = {
    "chunk": (
        "chunk_overhead.py",
        "chunk_instructions.py",
        "chunk_parts.py",
        "chunk_helper_threads.py",
    ),
    "scheduler": ("scheduler_hook.py", "scheduler_insitu.py", "scheduler_overhead.py"),
    "scale": (
        "scale_scheduler.py",
        "scale_runs.py",
        "run_memory.py",
        "scale_measurement.py",
        "exit_abort.py",
    ),
    "exit": ("exit_latency.py", "exit_flush.py"),
    "memory": ("memory_series.py",),
}


def chosen(only: list[str]) -> list[str]:
    """The benchmarks named by ``only`` (questions or script names), or all of them."""
    every = [name for names in QUESTIONS.values() for name in names]
    if not only:
        return every
    unknown = [o for o in only if o not in QUESTIONS and f"{o.removesuffix('.py')}.py" not in every]
    if unknown:
        raise SystemExit(f"run_all.py: no question or benchmark named {', '.join(unknown)}")
    return [
        name
        for question, names in QUESTIONS.items()
        for name in names
        if question in only or name.removesuffix(".py") in {o.removesuffix(".py") for o in only}
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short runs of every benchmark")
    parser.add_argument(
        "only", nargs="*", help=f"run only these questions ({', '.join(QUESTIONS)}) or scripts"
    )
    args = parser.parse_args(argv)
    here = Path(__file__).resolve().parent
    failed = []
    for name in chosen(args.only):
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
