"""Tables of :mod:`roastcoffea.metrics.chunks`: chunk distributions, datasets, failures, sections.

"Chunk Metrics" and its "Total Chunks" row are roastcoffea 0.1.2's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roastcoffea.report.tables.cells import (
    Cell,
    Column,
    Formatter,
    TableData,
    count,
    is_number,
    kv_rows,
    kv_table,
    mib,
    or_zero,
    row_label,
    show,
    value_cell,
)
from roastcoffea.units import format_bytes, format_number, format_rate, format_time

FAILED_CHUNKS_TITLE = "Failed Chunks"
SECTIONS_TITLE = "Sections"


def chunk_table(metrics: Mapping[str, Any]) -> TableData:
    """Chunk counts and per-chunk distributions."""
    rows = [(Cell("Total Chunks"), value_cell(metrics, "num_chunks", count))]
    if is_number(metrics.get("num_successful_chunks")):
        failed = metrics.get("num_failed_chunks") or 0
        rows.append((row_label("  Successful"), Cell(count(metrics["num_successful_chunks"]))))
        rows.append((row_label("  Failed"), Cell(count(failed), alert=bool(failed))))
    rows += kv_rows(
        metrics,
        (
            ("Mean Chunk Time (process)", "chunk_duration_mean", format_time),
            ("  Min", "chunk_duration_min", format_time),
            ("  Max", "chunk_duration_max", format_time),
            ("  Std Dev", "chunk_duration_std", format_time),
            ("Mean Task Time (whole task)", "chunk_task_duration_mean", format_time),
            ("Mean Memory Delta", "chunk_mem_delta_mean_mib", mib),
            ("Mean Events/Chunk", "chunk_events_mean", format_number),
            ("  Min", "chunk_events_min", count),
            ("  Max", "chunk_events_max", count),
        ),
    )
    return kv_table("Chunk Metrics", rows)


def dataset_table(metrics: Mapping[str, Any]) -> TableData | None:
    """Per dataset: chunks, failures, events, durations; None without chunk records."""
    per_dataset = metrics.get("per_dataset")
    if not isinstance(per_dataset, Mapping) or not per_dataset:
        return None
    names = ("Chunks", "Failed", "Events", "Mean Time", "Rate (process)")
    columns = (Column("Dataset", fit="name"), *(Column(name, numeric=True) for name in names))
    rows = []
    for dataset, row in per_dataset.items():
        failed = or_zero(row.get("num_failed"))
        rows.append(
            (
                Cell(str(dataset)),
                Cell(count(or_zero(row.get("num_chunks")))),
                Cell(count(failed), alert=failed > 0),
                show(row.get("total_events"), count, "a chunk lacks the event count"),
                show(row.get("mean_duration"), format_time, "no successful chunk"),
                show(row.get("events_per_second"), format_rate, "no event count or duration"),
            )
        )
    return TableData("Chunks per Dataset", columns, tuple(rows))


def failed_chunks_table(metrics: Mapping[str, Any]) -> TableData | None:
    """The failed chunks and their errors; None when none failed."""
    failed = metrics.get("failed_chunks")
    if not isinstance(failed, list) or not failed:
        return None
    columns = (
        Column("Dataset", fit="name"),
        Column("File", fit="name"),
        Column("Entries"),
        Column("Worker", fit="name"),
        Column("Error"),
    )
    rows = tuple(
        (
            Cell(str(chunk.get("dataset"))),
            Cell(str(chunk.get("file"))),
            Cell(f"{chunk.get('entry_start')}-{chunk.get('entry_stop')}"),
            Cell(str(chunk.get("worker"))),
            Cell(str(chunk.get("error")), alert=True),
        )
        for chunk in failed
    )
    return TableData(FAILED_CHUNKS_TITLE, columns, rows)


#: Section kind -> (unit label, formatter).
_SECTION_KINDS: dict[str, tuple[str, Formatter]] = {
    "timing": ("time", format_time),
    "memory": ("memory", mib),
    "bytes": ("bytes", format_bytes),
    "custom": ("custom", format_number),
}


_SECTION_STATS = ("total", "mean", "min", "max", "std")


def sections_table(metrics: Mapping[str, Any]) -> TableData | None:
    """Per-section statistics across chunks; None without sections."""
    sections = metrics.get("sections")
    if not isinstance(sections, Mapping) or not any(sections.values()):
        return None
    rows = []
    for kind, by_name in sections.items():
        if not isinstance(by_name, Mapping):
            continue
        label, fmt = _SECTION_KINDS.get(kind, (str(kind), format_number))
        for name, stats in by_name.items():
            if not isinstance(stats, Mapping):
                continue
            rows.append(
                (
                    Cell(label),
                    Cell(str(name)),
                    Cell(count(or_zero(stats.get("count")))),
                    *(show(stats.get(s), fmt, "no numeric value") for s in _SECTION_STATS),
                )
            )
    names = ("Chunks", "Total", "Mean", "Min", "Max", "Std Dev")
    columns = (Column("Kind"), Column("Section"), *(Column(n, numeric=True) for n in names))
    return TableData(SECTIONS_TITLE, columns, tuple(rows))
