"""Rich tables of a snapshot: per worker, per task prefix, and the self-report."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from rich.console import Console
from rich.table import Table

#: Console width used when printing to a pipe, so no column is cut.
WIDE = 120

#: Digest contexts whose rows belong to a task prefix.
TASK_CONTEXTS = ("execute", "p2p")


def _seconds_by(snap: dict[str, Any], field: int, activity: str) -> dict[str, float]:
    """Sum of ``activity`` seconds of task digests, keyed by the digest key's ``field``."""
    out: dict[str, float] = defaultdict(float)
    for key, value in snap["digests"].items():
        _, context, _, _, act, unit = key
        if context in TASK_CONTEXTS and act == activity and unit == "seconds":
            out[key[field]] += value
    return out


def _peak(series: dict[str, Any] | None, column: str) -> float | None:
    """Largest value of a series column, None when it was never measured."""
    if not series:
        return None
    values = [v for v in series["columns"][column]["max"] if not math.isnan(v)]
    return max(values) if values else None


def _fmt(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _mib(value: float | None) -> str:
    return "n/a" if value is None else f"{value / 2**20:.1f} MiB"


def worker_table(snap: dict[str, Any]) -> Table:
    """Tasks, compute and thread time, memory peak and payloads of each worker."""
    cpu, noncpu = _seconds_by(snap, 0, "thread-cpu"), _seconds_by(snap, 0, "thread-noncpu")
    table = Table(title="Workers")
    for column in (
        "worker",
        "tasks",
        "compute s",
        "thread-cpu s",
        "thread-noncpu s",
        "memory peak",
        "payloads",
    ):
        table.add_column(column, justify="left" if column == "worker" else "right")
    for address, info in sorted(snap["workers"].items()):
        stats = snap["worker_tasks"].get(address, {})
        table.add_row(
            address,
            str(stats.get("tasks", 0)),
            _fmt(stats.get("compute_s", 0.0)),
            _fmt(cpu.get(address, 0.0)),
            _fmt(noncpu.get(address, 0.0)),
            _mib(_peak(snap["series"].get(address), "memory")),
            str(info["payloads"]),
        )
    return table


def prefix_table(snap: dict[str, Any]) -> Table:
    """Task statistics and thread time of each task prefix."""
    cpu, noncpu = _seconds_by(snap, 3, "thread-cpu"), _seconds_by(snap, 3, "thread-noncpu")
    table = Table(title="Task prefixes")
    for column in (
        "prefix",
        "tasks",
        "erred",
        "compute s",
        "transfer s",
        "output bytes",
        "thread-cpu s",
        "thread-noncpu s",
    ):
        table.add_column(column, justify="left" if column == "prefix" else "right")
    for prefix, stats in sorted(snap["prefixes"].items()):
        table.add_row(
            prefix,
            str(stats["tasks"]),
            str(stats["erred"]),
            _fmt(stats["compute_s"]),
            _fmt(stats["transfer_s"]),
            str(stats["output_bytes"]),
            _fmt(cpu.get(prefix, 0.0)),
            _fmt(noncpu.get(prefix, 0.0)),
        )
    return table


def monitoring_table(snap: dict[str, Any]) -> Table:
    """The plugin's report on itself: drops, errors, hook cost, payload volume."""
    counters = snap["counters"]
    ns = counters["hook_ns_per_call"]
    table = Table(title="Monitoring self-report")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("dropped events", str(counters["dropped_events"]))
    table.add_row("hook errors", str(counters["hook_errors"]))
    table.add_row("hook ns per call", "n/a" if ns is None or math.isnan(ns) else f"{ns:.0f}")
    table.add_row("payload bytes", str(counters["payload_bytes"]))
    for name, count in sorted(snap["errors"].items()):
        table.add_row(f"errors: {name}", str(count))
    return table


def print_snapshot(snap: dict[str, Any], console: Console | None = None) -> None:
    """Print the three tables of ``snap`` to ``console`` (stdout by default)."""
    if console is None:
        console = Console()
        if not console.is_terminal and console.width < WIDE:
            console = Console(width=WIDE)  # pipes default to 80 columns
    for table in (worker_table(snap), prefix_table(snap), monitoring_table(snap)):
        console.print(table)
