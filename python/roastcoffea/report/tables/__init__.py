"""The tables of a metrics dictionary, as data: one module beside each metrics module.

Each builder takes a metrics dictionary and returns a
:class:`~roastcoffea.report.tables.cells.TableData` (title, columns, rows of cells,
optional note), or None for a breakdown without data. The cells, the formatting
they share and the key-value layout are in :mod:`~roastcoffea.report.tables.cells`;
the renderers only lay the tables out: :mod:`roastcoffea.report.summary` with rich
for the terminal, :mod:`roastcoffea.report.html` as an HTML page.

:data:`TABLE_BUILDERS` is the summary's table of contents, in its order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from roastcoffea.report.tables.cells import TableData
from roastcoffea.report.tables.chunks import (
    FAILED_CHUNKS_TITLE,
    SECTIONS_TITLE,
    chunk_table,
    dataset_table,
    failed_chunks_table,
    sections_table,
)
from roastcoffea.report.tables.cost import COST_TITLE, cost_table
from roastcoffea.report.tables.diagnosis import DIAGNOSIS_TITLE, diagnosis_table
from roastcoffea.report.tables.fine import (
    PREFIX_TABLE_TITLE,
    WORKER_TABLE_TITLE,
    fine_metrics_table,
    prefix_table,
    worker_table,
)
from roastcoffea.report.tables.hot_lines import HOT_LINES_TITLE, hot_lines_table
from roastcoffea.report.tables.metadata import metadata_tables
from roastcoffea.report.tables.monitoring import monitoring_table, unavailable_table
from roastcoffea.report.tables.node import NODES_TITLE, node_table
from roastcoffea.report.tables.phases import CODECS_TITLE, PHASES_TITLE, codecs_table, phases_table
from roastcoffea.report.tables.reads import READS_TITLE, reads_table
from roastcoffea.report.tables.wall_split import (
    TAIL_TITLE,
    WALL_SPLIT_TITLE,
    tail_table,
    wall_split_table,
)
from roastcoffea.report.tables.workers import resources_table
from roastcoffea.report.tables.workflow import (
    event_processing_table,
    throughput_table,
    timing_table,
)

#: Every table builder of the summary, in its order.
TABLE_BUILDERS: tuple[Callable[[Mapping[str, Any]], TableData | None], ...] = (
    throughput_table,
    event_processing_table,
    resources_table,
    node_table,
    timing_table,
    diagnosis_table,
    wall_split_table,
    tail_table,
    cost_table,
    hot_lines_table,
    reads_table,
    phases_table,
    codecs_table,
    fine_metrics_table,
    prefix_table,
    worker_table,
    chunk_table,
    dataset_table,
    failed_chunks_table,
    sections_table,
    monitoring_table,
)

#: Every table by its name, as ``roastcoffea show --table NAME`` takes it: the builder's
#: name without ``_table``, dashed (``wall-split``).
TABLE_NAMES: dict[str, Callable[[Mapping[str, Any]], TableData | None]] = {
    builder.__name__.removesuffix("_table").replace("_", "-"): builder for builder in TABLE_BUILDERS
}


def build_tables(metrics: Mapping[str, Any]) -> list[TableData]:
    """Every table of the summary, in order (breakdowns without data are left out)."""
    tables = (build(metrics) for build in TABLE_BUILDERS)
    return [table for table in tables if table is not None]


__all__ = [
    "CODECS_TITLE",
    "COST_TITLE",
    "DIAGNOSIS_TITLE",
    "FAILED_CHUNKS_TITLE",
    "HOT_LINES_TITLE",
    "NODES_TITLE",
    "PHASES_TITLE",
    "PREFIX_TABLE_TITLE",
    "READS_TITLE",
    "SECTIONS_TITLE",
    "TABLE_BUILDERS",
    "TABLE_NAMES",
    "TAIL_TITLE",
    "WALL_SPLIT_TITLE",
    "WORKER_TABLE_TITLE",
    "build_tables",
    "chunk_table",
    "codecs_table",
    "cost_table",
    "dataset_table",
    "diagnosis_table",
    "event_processing_table",
    "failed_chunks_table",
    "fine_metrics_table",
    "hot_lines_table",
    "metadata_tables",
    "monitoring_table",
    "node_table",
    "phases_table",
    "prefix_table",
    "reads_table",
    "resources_table",
    "sections_table",
    "tail_table",
    "throughput_table",
    "timing_table",
    "unavailable_table",
    "wall_split_table",
    "worker_table",
]
