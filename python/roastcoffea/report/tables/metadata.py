"""The run metadata (``metadata.json``) as tables: the measurement, versions, cluster, settings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roastcoffea.report.tables.cells import NA, Cell, Column, TableData, is_number, missing
from roastcoffea.units import format_bytes, format_time

#: Top-level ``metadata.json`` entries shown in the "Measurement" table.
_MEASUREMENT_KEYS = (
    ("Name", "name"),
    ("Start (UTC)", "start_utc"),
    ("End (UTC)", "end_utc"),
    ("Elapsed", "elapsed_time_seconds"),
    ("Saved (UTC)", "saved_utc"),
    ("Native Data File", "native_file"),
    ("Chunk Records File", "chunks_file"),
    ("Phase Records File", "phases_file"),
    ("Layout", "format"),
    ("Schema Version", "schema_version"),
)


#: Titles of the dict-valued metadata entries roastcoffea writes.
_METADATA_SECTIONS = {
    "versions": "Software Versions",
    "cluster": "Cluster Shape",
    "span": "Dask Span",
    "collector": "Collector Settings",
}


def _plain(value: Any) -> str:
    """A metadata value as text: lists joined, numbers with separators."""
    if isinstance(value, (list, tuple, set, frozenset)):
        return ", ".join(_plain(v) for v in value) if value else "none"
    if isinstance(value, bool) or value is None:
        return "yes" if value else ("no" if value is False else NA)
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _metadata_cell(key: str, value: Any) -> Cell:
    if value is None:
        return missing("not recorded")
    if key.endswith("_bytes") and is_number(value):
        return Cell(format_bytes(value))
    if key.endswith("_seconds") and is_number(value):
        return Cell(format_time(value))
    return Cell(_plain(value))


def _label_of(key: str) -> str:
    """``"memory_limit_bytes"`` as ``"Memory limit"``: a metadata key read as words.

    The unit suffix goes: :func:`_metadata_cell` writes the value with its unit.
    """
    for unit in ("_bytes", "_seconds"):
        key = key.removesuffix(unit)
    words = key.replace("_", " ").strip()
    return words[:1].upper() + words[1:]


def _dict_table(title: str, data: Mapping[str, Any], names: bool = False) -> TableData:
    """A metadata section; ``names``: its keys are names (packages) and stay as written."""
    rows = [
        (Cell(str(key) if names else _label_of(str(key))), _metadata_cell(str(key), value))
        for key, value in data.items()
    ]
    return TableData(title, (Column("Entry"), Column("Value")), tuple(rows))


def metadata_tables(metadata: Mapping[str, Any]) -> list[TableData]:
    """The run metadata (``metadata.json``) as tables.

    One "Measurement" table of the top-level entries, then one table per
    dict-valued entry (software versions, cluster shape, span, collector
    settings, and any the caller added).
    """
    top = [
        (Cell(label), _metadata_cell(key, metadata[key]))
        for label, key in _MEASUREMENT_KEYS
        if key in metadata
    ]
    known = {key for _, key in _MEASUREMENT_KEYS} | {"t0", "t1"}
    nested = []
    for key, value in metadata.items():
        if isinstance(value, Mapping):
            title = _METADATA_SECTIONS.get(key, _label_of(str(key)))
            nested.append(_dict_table(title, value, names=key == "versions"))
        elif key not in known:
            top.append((Cell(_label_of(str(key))), _metadata_cell(str(key), value)))
    if not top:
        return nested
    return [TableData("Measurement", (Column("Entry"), Column("Value")), tuple(top)), *nested]
