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
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from distributed import Client, LocalCluster

#: the venv of roastcoffea 0.1.2 that ``make bench-0.1.2`` makes, beside ours
RC012_PYTHON = Path(__file__).resolve().parents[1] / ".venv-0.1.2" / "bin" / "python"


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


def data_dir(events: int, files: int) -> Path:
    """Where the benchmarks cache the demo's synthetic NanoAOD of this size."""
    return Path(tempfile.gettempdir()) / "roastcoffea-bench" / f"{events}x{files}"


def child_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a benchmark that also runs itself under roastcoffea 0.1.2's venv."""
    parser.add_argument(
        "--rc012-python",
        default=str(RC012_PYTHON),
        help="the Python of a venv with roastcoffea 0.1.2 (make bench-0.1.2 makes it)",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("paths", nargs="*", help=argparse.SUPPRESS)


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
