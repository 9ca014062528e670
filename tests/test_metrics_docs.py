"""docs/metrics.md documents exactly the keys compute_metrics returns, and names them by its
one rule ("How keys are named"): units written whole at the end, 0.1.2's names as aliases."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_metrics_support import chunk, metrics_of

from roastcoffea.compat_0_1_2.names import METRIC_ALIASES

DOCS = Path(__file__).resolve().parents[1] / "docs" / "metrics.md"

#: Endings the rule forbids: a unit abbreviated, or MB where MiB is meant.
FORBIDDEN = re.compile(r"(_ms|_pct|_percentage|_mb|_mbs|(?<!_mb)_s)$")
#: A unit ending and the unit column's text that must go with it.
SUFFIX_UNITS = {
    "_seconds": "s",
    "_percent": "%",
    "_bytes": "bytes",
    "_mib": "MiB",
    "_mb_s": "MB/s",
    "_gbps": "Gbit/s",
    "_khz": "kHz",
    "_hz": "Hz",
    "_us": "µs",
}


def metrics_part() -> str:
    text = DOCS.read_text(encoding="utf-8")
    return text[text.index("## Workflow") : text.index("## Chunk records")]


def table_rows() -> list[tuple[list[str], str]]:
    """``(keys, unit)`` of every row of the metric tables."""
    rows = []
    for line in metrics_part().splitlines():
        if line.startswith("| `"):
            cells = line.split("|")
            rows.append((re.findall(r"`([a-z0-9_]+)`", cells[1]), cells[2].strip()))
    return rows


def documented_aliases() -> dict[str, str]:
    """``{0.1.2 name: our key}`` of the "Aliases:" paragraphs (`old` = `ours`)."""
    aliases: dict[str, str] = {}
    for paragraph in metrics_part().split("\n\n"):
        if paragraph.startswith("Aliases:"):
            pairs = re.findall(r"`([a-z0-9_]+)` =\s+`([a-z0-9_]+)`", paragraph)
            aliases.update(pairs)
    return aliases


def documented_keys() -> set[str]:
    """Every key a metrics file may hold: the tables' and the aliases (older files)."""
    return {key for keys, _ in table_rows() for key in keys} | set(documented_aliases())


def test_docs_and_output_have_the_same_keys() -> None:
    metrics = metrics_of(chunks=[chunk()], custom_metrics={"dy": {"entries": 1}})
    produced = set(metrics) - {"unavailable"}
    documented = documented_keys() - set(documented_aliases())
    assert produced - documented == set(), "produced but not documented"
    assert documented - produced == set(), "documented but not produced"


def test_every_alias_is_documented_and_names_a_produced_key() -> None:
    metrics = metrics_of(chunks=[chunk()], custom_metrics={"dy": {"entries": 1}})
    assert documented_aliases() == METRIC_ALIASES
    assert set(METRIC_ALIASES.values()) <= set(metrics)
    assert not set(METRIC_ALIASES) & set(metrics), "an alias is stored"


@pytest.mark.parametrize(("keys", "unit"), table_rows(), ids=lambda v: str(v)[:40])
def test_a_documented_key_ends_in_its_unit(keys: list[str], unit: str) -> None:
    for key in keys:
        assert not FORBIDDEN.search(key), f"{key}: a unit abbreviated or MB for MiB"
        for suffix, text in SUFFIX_UNITS.items():
            if key.endswith(suffix):
                assert text in unit, f"{key} ends in {suffix} but its unit is {unit!r}"
                break
