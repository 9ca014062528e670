"""The table of :mod:`roastcoffea.metrics.diagnosis`: one finding per row."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roastcoffea.report.tables.cells import Cell, Column, TableData

DIAGNOSIS_TITLE = "Diagnosis"


def diagnosis_table(metrics: Mapping[str, Any]) -> TableData | None:
    """The diagnosis findings, one per row; None without phases."""
    findings = metrics.get("diagnosis")
    if not isinstance(findings, list) or not findings:
        return None
    rows = tuple((Cell(str(f.get("message", ""))),) for f in findings if isinstance(f, Mapping))
    return TableData(DIAGNOSIS_TITLE, (Column("Finding"),), rows)
