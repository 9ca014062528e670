"""Tables of :mod:`roastcoffea.metrics.phases`: the processor's phases and its codecs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roastcoffea.report.tables.cells import (
    Cell,
    Column,
    TableData,
    count,
    is_number,
    mb_per_second,
    percent,
    row_label,
    show,
    value_cell,
)
from roastcoffea.units import format_bytes, format_rate, format_time

PHASES_TITLE = "Processor Phases"
CODECS_TITLE = "Decompression per Codec"


def phases_table(metrics: Mapping[str, Any]) -> TableData | None:
    """Wall and CPU time and share per phase of the processor tasks; None without phases."""
    wall, cpu = metrics.get("phase_wall_seconds"), metrics.get("phase_cpu_seconds")
    shares = metrics.get("phase_share_percent")
    if (
        not isinstance(wall, Mapping)
        or not isinstance(cpu, Mapping)
        or not isinstance(shares, Mapping)
    ):
        return None
    helpers = metrics.get("helper_cpu_seconds")
    helpers = helpers if isinstance(helpers, Mapping) else None
    off_cpu = _off_cpu(metrics)
    split = off_cpu is not None
    rows = [
        (
            Cell(str(phase)),
            show(seconds, format_time),
            show(cpu.get(phase), format_time),
            *(() if off_cpu is None else (show(m.get(phase), format_time) for m in off_cpu)),
            show(shares.get(phase), percent),
            *(() if helpers is None else (_helper_cell(helpers, phase),)),
        )
        for phase, seconds in wall.items()
    ]
    names = (
        "Wall",
        "CPU",
        *(("Waiting for a CPU", "Blocked") if split else ()),
        "Share",
        *(() if helpers is None else ("Helper Threads' CPU",)),
    )
    columns = (Column("Phase"), *(Column(name, numeric=True) for name in names))
    blank = (Cell(""),) * (len(names) - 1)
    rows += [
        (row_label(label), value_cell(metrics, key, fmt), *blank)
        for label, key, fmt in (
            ("Read Bandwidth", "read_bandwidth_mb_s", mb_per_second),
            ("Decompression Output Rate", "decompress_throughput_mb_s", mb_per_second),
            ("Interpretation Rate", "interpret_rate_hz", format_rate),
            ("Data Input (open, read, decompress, interpret)", "io_phase_percent", percent),
        )
    ]
    tasks = show(metrics.get("phase_tasks"), count).text
    note = f"{tasks} task(s) measured; shares of their compute time."
    if split:
        note += (
            f" Off CPU: {percent(metrics.get('cpu_wait_percent'))} waiting for a CPU (the "
            f"threads' run-queue delay), {percent(metrics.get('blocked_percent'))} blocked "
            "(reads, locks, sleeps; Python's GIL is in either)."
        )
    else:
        why = (metrics.get("unavailable") or {}).get("phase_cpu_wait_seconds")
        if why:
            note += f" Time off CPU not split into its causes: {why}."
    if helpers is not None:
        runs = show(metrics.get("helper_runs"), count).text
        note += (
            f" {runs} call(s) ran on uproot's executor pools: their CPU is beside the tasks'"
            " own, not in the shares (the tasks' waits for them are)."
        )
    bound = metrics.get("phase_cpu_split_bound_seconds")
    if is_number(bound) and bound > 0:
        note += (
            f" Each phase's CPU is exact to within {format_time(bound)} (CPU split by wall;"
            " the setting roastcoffea.phase-cpu-interval = 0 makes it exact)."
        )
    return TableData(PHASES_TITLE, columns, tuple(rows), note)


def _off_cpu(metrics: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...] | None:
    """Each phase's time waiting for a CPU and blocked; None when not split."""
    waits, blocked = metrics.get("phase_cpu_wait_seconds"), metrics.get("phase_blocked_seconds")
    if isinstance(waits, Mapping) and isinstance(blocked, Mapping):
        return waits, blocked
    return None


def _helper_cell(helpers: Mapping[str, Any], phase: str) -> Cell:
    """A phase's CPU on helper threads; blank for a phase they did not run."""
    return show(helpers[phase], format_time) if phase in helpers else Cell("")


def codecs_table(metrics: Mapping[str, Any]) -> TableData | None:
    """Decompression time, bytes and rate per codec; None without any."""
    codecs = metrics.get("decompress_codecs")
    if not isinstance(codecs, Mapping) or not codecs:
        return None
    rows = tuple(
        (
            Cell(str(name)),
            show(c.get("wall_seconds"), format_time),
            show(c.get("compressed_bytes"), format_bytes),
            show(c.get("bytes"), format_bytes),
            show(c.get("throughput_mb_s"), mb_per_second, "no decompression time"),
        )
        for name, c in sorted(codecs.items())
    )
    columns = (
        Column("Codec"),
        *(Column(name, numeric=True) for name in ("Time", "In", "Out", "Output Rate")),
    )
    return TableData(CODECS_TITLE, columns, rows)
