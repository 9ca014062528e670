"""docs/metrics.md documents exactly the keys compute_metrics returns."""

from __future__ import annotations

import re
from pathlib import Path

from test_metrics_support import chunk, metrics_of

DOCS = Path(__file__).resolve().parents[1] / "docs" / "metrics.md"


def documented_keys() -> set[str]:
    """Keys in the first column of the metric tables, and in the "Aliases:" paragraphs."""
    text = DOCS.read_text(encoding="utf-8")
    part = text[text.index("## Workflow") : text.index("## Chunk records")]
    keys: set[str] = set()
    for line in part.splitlines():
        if line.startswith("| `"):
            keys.update(re.findall(r"`([a-z0-9_]+)`", line.split("|")[1]))
    for paragraph in part.split("\n\n"):
        if paragraph.startswith("Aliases:"):
            keys.update(re.findall(r"`([a-z0-9_]+)`", paragraph))
    return keys


def test_docs_and_output_have_the_same_keys() -> None:
    metrics = metrics_of(chunks=[chunk()], custom_metrics={"dy": {"entries": 1}})
    produced = set(metrics) - {"unavailable"}
    documented = documented_keys()
    assert produced - documented == set(), "produced but not documented"
    assert documented - produced == set(), "documented but not produced"
