"""Each label a reader sees names what its metric's formula in docs/metrics.md computes.

The summary tables and the compare table label metrics by key; every word of a
label (but filler words) must occur in the key's row of docs/metrics.md, its
formula or meaning. A label that says "I/O" over an off-CPU share, or a row
renamed without its documentation, fails here.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from roastcoffea.plots.catalog import _CATALOG
from roastcoffea.plots.compare import plot_measurement_comparison
from roastcoffea.report import tables
from roastcoffea.report.compare import KEY_METRICS
from roastcoffea.report.tables import cells

METRICS_DOC = Path(__file__).resolve().parents[1] / "docs" / "metrics.md"

#: Words that name no quantity.
FILLER = {"the", "of", "a", "per", "and", "in", "to", "on", "vs", "avg", "total", "from", "with"}

#: Metrics for which every builder gives its table.
PHASES = {"phase_wall_seconds": {}, "phase_cpu_seconds": {}, "phase_share_percent": {}}

#: Every builder of a summary table whose rows are labelled metric keys.
BUILDERS = (
    tables.throughput_table,
    tables.event_processing_table,
    tables.resources_table,
    tables.timing_table,
    tables.fine_metrics_table,
    tables.phases_table,
    tables.chunk_table,
)


def _documented_rows() -> dict[str, str]:
    """Each documented key: its row in the reference part, lowercase, with ``_`` as spaces."""
    rows: dict[str, str] = {}
    reference = METRICS_DOC.read_text().split("\n## The metrics dictionary\n", 1)[1]
    for line in reference.splitlines():
        if line.startswith("| `"):
            for key in re.findall(r"`([a-z0-9_]+)`", line.split("|")[1]):
                rows.setdefault(key, line.lower().replace("_", " "))
    return rows


def _table_labels(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """(label, key) of every metric row the summary tables write."""
    seen: list[tuple[str, str]] = []
    build_rows = cells.kv_rows

    def recording(metrics: Any, specs: Iterable[cells.Spec]) -> Any:
        specs = list(specs)
        seen.extend((label.strip(), key) for label, key, _ in specs)
        return build_rows(metrics, specs)

    # Every builder module takes kv_rows from cells by name.
    for module in sys.modules.values():
        if module.__name__.startswith(tables.__name__ + ".") and hasattr(module, "kv_rows"):
            monkeypatch.setattr(module, "kv_rows", recording)
    for build in BUILDERS:
        build(PHASES)
    return seen


def _words(label: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9]+", label.lower()) if w not in FILLER]


def test_every_label_uses_the_words_of_its_documented_formula(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    documented = _documented_rows()
    labels = _table_labels(monkeypatch) + [(q.label, q.key) for q in KEY_METRICS]
    assert len(labels) > 50
    wrong = []
    for label, key in labels:
        row = documented.get(key)
        if row is None:
            wrong.append(f"{key}: not in docs/metrics.md")
            continue
        missing = [w for w in _words(label) if w.rstrip("s") not in row]
        if missing:
            wrong.append(f"{key} labelled {label!r}: {missing} not in its row")
    assert not wrong, "\n".join(wrong)


def test_time_off_cpu_and_the_data_input_share_never_share_a_label(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    labels: dict[str, set[str]] = {}
    for label, key in _table_labels(monkeypatch) + [(q.label, q.key) for q in KEY_METRICS]:
        labels.setdefault(key, set()).add(label.lower())
    assert all("off cpu" in label and "i/o" not in label for label in labels["io_overhead_percent"])
    assert all("input" in label for label in labels["io_phase_percent"])
    titles = {spec.entry.name: spec.entry.title for spec in _CATALOG}
    assert "I/O" not in titles["per_task_cpu_io"] and "Off-CPU" in titles["per_task_cpu_io"]


def test_the_comparison_figure_calls_the_off_cpu_share_by_its_name() -> None:
    run = {"io_overhead_percent": 20.0, "core_efficiency": 0.5}
    _, axes = plot_measurement_comparison([run, run], labels=["a", "b"])
    legend = [t.get_text() for t in axes[1].get_legend().get_texts()]
    assert "processor time off CPU (%)" in legend and not any("I/O" in t for t in legend)


def test_the_reference_leads_with_the_labels_the_summary_shows() -> None:
    lead = METRICS_DOC.read_text().split("\n## ", 2)[1]
    shown = {
        tables.PHASES_TITLE,
        tables.DIAGNOSIS_TITLE,
        tables.WALL_SPLIT_TITLE,
        tables.COST_TITLE,
        tables.HOT_LINES_TITLE,
    }
    for build in BUILDERS:
        table = build(PHASES)
        assert table is not None
        shown |= {row[0].text for row in table.rows}
    rows = [line.split("|") for line in lead.splitlines() if line.startswith("| `")]
    assert len(rows) >= 10
    for row in rows:
        for label in row[4].split(","):
            assert any(s.startswith(label.strip()) for s in shown), label
