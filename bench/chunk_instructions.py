"""Instructions monitoring adds to a chunk, counted by valgrind: exact where CPU time is noisy.

What it measures: the four runs of a demo chunk of ``bench/chunk_cost.py`` (bare with the
hooks idle, ``@track_metrics`` alone, the phase clock alone, monitored), each in a process of
its own under ``valgrind --tool=callgrind`` (every instruction of every thread counted, each
thread apart; the same hash seed and, with ``setarch --addr-no-randomize``, the same
addresses in every process). A process runs the same warm-up (imports, one run of each
variant), then, the garbage collector off, its variant on ``--chunks`` chunks; a baseline
process runs the warm-up only. Instructions per chunk = (the variant's count - the
baseline's) / chunks, for the main thread (where the chunks run: what ``chunk_cost.py``
times) and for all threads (uproot's I/O thread, numpy's BLAS threads spinning).

The count is exact and the same from one run to the next (this machine's CPU time per chunk
varies by 20% with its host's load), but it is not time: the kernel's work (the phase
clock's ``clock_gettime`` system calls, page faults) and what the monitoring costs the code
around it (the CPU caches it disturbs) do not show, so it complements ``chunk_cost.py``.
Under valgrind a chunk runs about 50 times slower: 10 chunks take a few minutes per process.
Nothing is asserted; the script prints figures.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from chunk_cost import variants
from common import parse_chunk_bench, phase_hooks, table

from roastcoffea.plugin.worker.phases import digest_task_phases
from roastcoffea.records import drain_local_records

HERE = Path(__file__).resolve().parent
BASELINE = "warm-up only"


def child_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--child", help=argparse.SUPPRESS)


def child(name: str, ranges: list) -> None:
    """The process valgrind counts: the warm-up, then ``name`` on every chunk.

    The garbage collector is off after the warm-up (its passes would land on any
    variant at random) and the process ends without finalising (what is left to free
    depends on the variant).
    """
    with phase_hooks(digest_task_phases):
        for run in variants(ranges[0]).values():
            run()
        drain_local_records()
        gc.collect()
        gc.disable()
        if name != BASELINE:
            for chunk in ranges:
                variants(chunk)[name]()
                drain_local_records()
    os._exit(0)


def counted(name: str, argv: list[str], directory: Path) -> tuple[int, int]:
    """The instructions valgrind counts in a child running ``name``: (its main thread, where
    the chunks run; every thread)."""
    out = directory / f"{len(os.listdir(directory))}.callgrind"
    command = [
        "setarch",
        platform.machine(),
        "--addr-no-randomize",
        "valgrind",
        "--tool=callgrind",
        "--separate-threads=yes",
        f"--callgrind-out-file={out}",
        sys.executable,
        str(HERE / "chunk_instructions.py"),
        *argv,
        "--child",
        name,
    ]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    subprocess.run(command, check=True, env=env, capture_output=True)
    threads = {}
    for path in directory.glob(f"{out.name}-*"):  # one file per thread, -01 the main one
        totals = re.search(r"^(?:summary|totals): (\d+)", path.read_text(), re.M)
        if totals is None:
            raise RuntimeError(f"no instruction total in {path}")
        threads[path.name] = int(totals.group(1))
    return threads[f"{out.name}-01"], sum(threads.values())


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args, directory, ranges = parse_chunk_bench(__doc__, 10, argv, child_option)
    if args.child:
        child(args.child, ranges)
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind; make bench does)")
        return 1
    names = list(variants(ranges[0]))
    with tempfile.TemporaryDirectory() as scratch:
        base = counted(BASELINE, argv, Path(scratch))
        per_chunk = {}
        for n in names:
            count = counted(n, argv, Path(scratch))
            per_chunk[n] = [(c - b) / len(ranges) for c, b in zip(count, base, strict=True)]
    print(
        f"chunk instructions: {len(ranges)} chunks of {args.chunksize:,} events per process, "
        f"demo NanoAOD in {directory}\n"
    )
    rows = []
    for n in names:
        row = [n]
        for value, bare in zip(per_chunk[n], per_chunk["bare"], strict=True):
            extra = value - bare
            row += [f"{value / 1e6:,.2f}"]
            row += (
                ["", ""] if n == "bare" else [f"{extra / 1e6:+,.3f}", f"{100 * extra / bare:+.3f}%"]
            )
        rows.append(row)
    headers = ["per chunk (million instructions)", "main thread", "- bare", "share"]
    print(table([*headers, "all threads", "- bare", "share"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
