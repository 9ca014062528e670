"""Tables of :mod:`roastcoffea.metrics.wall_split`: the stages of the wall time, the tail."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roastcoffea.report.tables.cells import (
    NA,
    Cell,
    Column,
    TableData,
    is_number,
    or_zero,
    percent,
    short_file,
    show,
    worker_name,
)
from roastcoffea.units import format_time

WALL_SPLIT_TITLE = "Where the Wall Time Went"
TAIL_TITLE = "Chunks in the Tail"
#: Chunks of the tail shown (the longest first).
TAIL_ROWS = 10
_STAGE_LABELS = {
    "startup": "Start-up (to the first processor task)",
    "steady": "Steady (every thread busy)",
    "tail": "Tail (fewer tasks than threads)",
    "finish": "Finish (last task to exit)",
}


def wall_split_table(metrics: Mapping[str, Any]) -> TableData | None:
    """The four stages of the wall time with their idle thread-seconds, and the bounds."""
    split = metrics.get("wall_split")
    if not isinstance(split, Mapping):
        return None
    stages = {stage: row for stage, row in split.items() if isinstance(row, Mapping)}
    total = sum(or_zero(row.get("seconds")) for row in stages.values())
    columns = (
        Column("Stage"),
        Column("Wall", numeric=True),
        Column("Share", numeric=True),
        Column("Idle Thread-Seconds", numeric=True),
    )
    rows = []
    for stage, label in _STAGE_LABELS.items():
        if stage not in stages:
            continue
        seconds = stages[stage].get("seconds")
        share = percent(100.0 * seconds / total) if total and is_number(seconds) else NA
        rows.append(
            (
                Cell(label),
                show(seconds, format_time),
                Cell(share),
                show(stages[stage].get("idle_thread_seconds"), format_time),
            )
        )
    packing = metrics.get("packing_bound_seconds")
    longest = metrics.get("longest_chunk_seconds")
    note = (
        "Idle: a thread running no processor task. The processing (first task's start to "
        f"the last one's end) took {format_time(or_zero(metrics.get('processing_seconds')))}; "
        "it cannot take less than the processor tasks' time over the threads "
        f"({format_time(or_zero(packing))}, perfect packing) nor the longest chunk "
        f"({format_time(or_zero(longest))})."
    )
    return TableData(WALL_SPLIT_TITLE, columns, tuple(rows), note)


def tail_table(metrics: Mapping[str, Any]) -> TableData | None:
    """The chunks running in the tail, longest first, against the median, with their cause."""
    chunks = metrics.get("tail_chunks")
    findings = metrics.get("diagnosis") or []
    if not isinstance(chunks, list) or not any(f.get("rule") == "tail" for f in findings):
        return None  # a tail too short to be a finding
    columns = (
        Column("Chunk", fit="name"),
        Column("Worker", fit="name"),
        Column("Duration", numeric=True),
        Column("vs Median", numeric=True),
        Column("Cause (phase vs its median)"),
    )
    rows = []
    for chunk in chunks[:TAIL_ROWS]:
        ratio = chunk.get("vs_median")
        cause = chunk.get("cause")
        cause_ratio = chunk.get("cause_vs_median")
        rows.append(
            (
                Cell(f"{chunk.get('dataset')}: {short_file(chunk.get('file'))}"),
                Cell(worker_name(chunk.get("worker"))),
                Cell(format_time(chunk["seconds"])),
                Cell(f"{ratio:.1f}x" if is_number(ratio) else NA, alert=_slow(ratio)),
                Cell(_tail_cause(ratio, cause, cause_ratio)),
            )
        )
    more = len(chunks) - TAIL_ROWS
    note = f"{more} more chunks ran in the tail." if more > 0 else None
    return TableData(TAIL_TITLE, columns, tuple(rows), note)


def _tail_cause(ratio: Any, cause: Any, cause_ratio: Any) -> str:
    if not _slow(ratio):
        return "not slow"
    if cause is None:
        return "no phase measured"
    return f"{cause} ({cause_ratio:.1f}x)" if is_number(cause_ratio) else str(cause)


def _slow(ratio: Any) -> bool:
    return is_number(ratio) and ratio >= 2.0
