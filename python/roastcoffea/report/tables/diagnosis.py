"""The table of :mod:`roastcoffea.metrics.diagnosis`: one finding per row, the largest
stake first, under the balance of the processor's time."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roastcoffea.report.tables.cells import NA, Cell, Column, TableData, is_number
from roastcoffea.units import format_time

DIAGNOSIS_TITLE = "Diagnosis"


def diagnosis_table(metrics: Mapping[str, Any]) -> TableData | None:
    """The findings, one per row, with the wall time each holds at stake; None without any."""
    findings = metrics.get("diagnosis")
    summary = metrics.get("diagnosis_summary")
    if not isinstance(findings, list) or not (findings or summary):
        return None
    rows = tuple(
        (Cell(_stake(f.get("wall_at_stake_seconds"))), Cell(str(f.get("message", ""))))
        for f in findings
        if isinstance(f, Mapping)
    )
    if not rows:
        rows = ((Cell("-"), Cell("no rule found a cause of lost time")),)
    note = (
        "At stake: the processing's wall time the cause held, what removing it could save at most."
    )
    if isinstance(summary, str):
        note = f"{summary}. {note}"
    return TableData(
        DIAGNOSIS_TITLE, (Column("At Stake", numeric=True), Column("Finding")), rows, note
    )


def _stake(seconds: Any) -> str:
    return format_time(seconds) if is_number(seconds) else NA
