"""The table of :mod:`roastcoffea.metrics.cost`: processor CPU per event by dataset and phase."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roastcoffea.phase_vocabulary import PHASES
from roastcoffea.report.tables.cells import Cell, Column, TableData, microseconds, show

COST_TITLE = "Processor CPU per Event by Dataset and Phase"


def cost_table(metrics: Mapping[str, Any]) -> TableData | None:
    """Thread-CPU microseconds per event per dataset (rows) and phase (columns)."""
    table = metrics.get("cost_per_event_us")
    if not isinstance(table, Mapping) or not table:
        return None
    phases = [p for p in (*PHASES, "all") if any(p in row for row in table.values())]
    columns = (
        Column("Dataset", fit="name"),
        *(Column("All Phases" if p == "all" else p.title(), numeric=True) for p in phases),
    )
    rows = tuple(
        (Cell(str(dataset)), *(show(row.get(p), microseconds, "not measured") for p in phases))
        for dataset, row in table.items()
    )
    note = "Thread CPU of the processor tasks per event, by phase (the phase records)."
    return TableData(COST_TITLE, columns, rows, note)
