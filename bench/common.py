"""Small helpers shared by the benchmarks: robust summaries, plain-text tables, a cluster.

Every benchmark measures on a shared, noisy machine, so figures are medians over
rounds with their spread (interquartile range), and comparisons are paired per round.
Nothing here asserts on a timing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import platform
import statistics
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from distributed import Client, LocalCluster


def quantile(values: Sequence[float], q: float) -> float:
    """Quantile with linear interpolation between order statistics (numpy's default)."""
    if not values:
        raise ValueError("quantile of no values")
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def iqr(values: Sequence[float], digits: int = 0) -> str:
    """The interquartile range as text, e.g. '101-117'."""
    return f"{quantile(values, 0.25):.{digits}f}-{quantile(values, 0.75):.{digits}f}"


def spread(values: Sequence[float], digits: int = 0) -> list[str]:
    """The median and the interquartile range as two table cells."""
    return [f"{median(values):.{digits}f}", iqr(values, digits)]


def interval(values: Sequence[float]) -> tuple[float, float, float]:
    """(mean, low, high): the mean and its 95 % confidence interval (Student's t)."""
    from scipy import stats

    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, mean, mean
    half = stats.t.ppf(0.975, len(values) - 1) * statistics.stdev(values) / len(values) ** 0.5
    return mean, mean - half, mean + half


def median_interval(values: Sequence[float]) -> tuple[float, float, float]:
    """(median, low, high): the median and its distribution-free 95 % confidence interval.

    The interval is a pair of order statistics (the sign test's): it holds whatever the
    shape of the values, heavy tails included, as long as they are independent.
    """
    from scipy import stats

    ordered = sorted(values)
    n = len(ordered)
    k = int(stats.binom.ppf(0.025, n, 0.5))  # P(fewer than k below the median) <= 2.5 %
    k = max(k - 1, 0)
    return statistics.median(ordered), ordered[k], ordered[n - 1 - k]


def spread_table(rows: Sequence[tuple[str, Sequence[float], int]]) -> str:
    """A table of per-chunk figures: each (label, values, digits) as its median and IQR."""
    return table(["per chunk", "median", "IQR"], [[n, *spread(v, d)] for n, v, d in rows])


def data_dir(events: int, files: int) -> Path:
    """Where the benchmarks cache the demo's synthetic NanoAOD of this size."""
    return Path(tempfile.gettempdir()) / "roastcoffea-bench" / f"{events}x{files}"


def chunk_arguments(parser: argparse.ArgumentParser, chunks: int) -> None:
    """The options of a benchmark over demo chunks: --chunks, --chunksize, --repeats,
    --data-dir, --quick."""
    from roastcoffea.demo.analysis import DEFAULT_CHUNKSIZE

    parser.add_argument("--chunks", type=int, default=chunks, help=f"chunks per repeat ({chunks})")
    parser.add_argument(
        "--chunksize", type=int, default=DEFAULT_CHUNKSIZE, help=f"events ({DEFAULT_CHUNKSIZE:,})"
    )
    parser.add_argument("--repeats", type=int, default=3, help="repeats (3)")
    parser.add_argument("--data-dir", type=Path, default=None, help="cache of the input files")
    parser.add_argument("--quick", action="store_true", help="3 chunks, 1 repeat")


def parse_chunk_bench(
    doc: str,
    chunks: int,
    argv: list[str] | None,
    more: Callable[[argparse.ArgumentParser], None] | None = None,
) -> tuple[argparse.Namespace, Path, list[tuple[Path, int, int]]]:
    """The arguments of a benchmark over demo chunks (``more`` adds its own), the files'
    directory and the chunks; coffea's warnings about the synthetic files are silenced."""
    import warnings

    from coffea.nanoevents import NanoAODSchema

    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    chunk_arguments(parser, chunks)
    if more is not None:
        more(parser)
    args = parser.parse_args(argv)
    directory, ranges = demo_chunks(args)
    warnings.filterwarnings("ignore", module="coffea")
    NanoAODSchema.warn_missing_crossrefs = False
    return args, directory, ranges


def child_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a benchmark that also runs itself under roastcoffea 0.1.2's venv."""
    parser.add_argument("--rc012-python", default="/tmp/rc012/bin/python")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("paths", nargs="*", help=argparse.SUPPRESS)


def demo_chunks(args: argparse.Namespace) -> tuple[Path, list[tuple[Path, int, int]]]:
    """The demo files' directory and the first ``args.chunks`` (path, start, stop) chunks
    of ``args.chunksize`` events.

    ``--quick`` makes it 3 chunks and 1 repeat. The files are made once and cached.
    """
    from roastcoffea.demo.nanoaod import DEFAULT_EVENTS, DEFAULT_FILES, ensure_files

    if args.quick:
        args.chunks, args.repeats = 3, 1
    directory = args.data_dir or data_dir(DEFAULT_EVENTS, DEFAULT_FILES)
    files = ensure_files(directory, DEFAULT_EVENTS, DEFAULT_FILES)
    per_file = DEFAULT_EVENTS // DEFAULT_FILES
    ranges = [
        (path, start, min(start + args.chunksize, per_file))
        for path in files
        for start in range(0, per_file, args.chunksize)
    ]
    return directory, ranges[: args.chunks]


@contextlib.contextmanager
def phase_hooks(sink: Callable[[Any], None]) -> Iterator[None]:
    """The phase hooks installed, every finished task clock handed to ``sink``."""
    from roastcoffea.instrument import _phase_hooks, phases

    _phase_hooks.install()
    phases.set_sink(sink)
    try:
        yield
    finally:
        phases.set_sink(None)
        _phase_hooks.uninstall()


def answer_parent(marker: str, result: dict[str, Any]) -> int:
    """Print a child's result where :func:`run_child` finds it; the exit status."""
    print(marker + json.dumps(result), flush=True)
    return 0


def run_child(python: str, script: str, args: list[str], marker: str) -> dict[str, Any]:
    """Run ``script`` with ``python`` (another venv, say) and return the JSON it printed
    after ``marker``, or ``{"error": ...}`` with the end of its output."""
    command = [python, str(Path(script).resolve()), *args]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tempfile.gettempdir())
    for line in done.stdout.splitlines():
        if line.startswith(marker):
            return json.loads(line[len(marker) :])
    tail = (done.stderr or done.stdout).strip().splitlines()[-12:]
    return {"error": f"exit status {done.returncode}: " + "\n".join(tail)}


def cpu_seconds() -> float:
    """CPU seconds (user + system) this process has used; run on workers with client.run."""
    t = os.times()
    return t.user + t.system


def verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def machine() -> str:
    """One line saying where the figures come from."""
    import dask
    import distributed

    return (
        f"{os.cpu_count()} cores ({platform.machine()}), Python {platform.python_version()}, "
        f"dask {dask.__version__}, distributed {distributed.__version__}; "
        "shared machine: compare ratios measured in the same run, not absolute times"
    )


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain-text table; the first column is left-aligned, the others right-aligned.

    Short rows are padded with empty cells.
    """
    width = len(headers)
    cells = [[str(h) for h in headers]]
    cells += [[str(c) for c in row] + [""] * (width - len(row)) for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(width)]

    def line(row: list[str]) -> str:
        parts = [row[0].ljust(widths[0])]
        parts += [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule, *(line(row) for row in cells[1:])])


@contextlib.contextmanager
def quiet_cluster(n_workers: int = 2) -> Iterator[Client]:
    """A client of ``LocalCluster(n_workers, threads_per_worker=1, processes=True)``, quiet."""
    with (
        LocalCluster(
            n_workers=n_workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.CRITICAL,
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client
