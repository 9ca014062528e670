"""A measurement's tables as columns: pandas and Arrow views, and the chunk records' Parquet file.

Three tables, one row each per:

``"chunks"``
    chunk record (``metrics["raw_chunk_metrics"]``); dict fields are spread one
    level into columns (``timing.jets``, ``accessed_baskets.id``).
``"phases"``
    task measured by the phase clock (``metrics["raw_phase_records"]``), with
    ``wall.<phase>`` and ``cpu.<phase>`` columns.
``"workers"``
    worker of the run (``metrics["per_worker"]``), with its phases'
    wall seconds (``phase.<phase>``) when measured.

The Parquet file of a saved measurement holds the chunk records exactly: a
field whose values all have one plain type (bool, int, float, str; None
allowed) is a typed column, any other one a column of its values as tagged
JSON text (:mod:`roastcoffea.measurement`), ``_absent`` lists the fields a
record does not have and ``_order`` its fields' order where it is not the
columns'. So :func:`records_from_arrow` gives back the very
records :func:`records_to_arrow` was given, types included. pandas and pyarrow
come with the ``coffea`` and ``plot`` extras.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

Table = Literal["chunks", "phases", "workers"]

#: Column of the fields a record lacks, and of its fields' order when not the columns'.
ABSENT = "_absent"
ORDER = "_order"
#: Plain types a field may have to be a typed column, and their Arrow types' names.
_PLAIN = {bool: "bool_", int: "int64", float: "float64", str: "string"}
#: Key of the Parquet file's metadata naming the columns held as tagged JSON text.
_JSON_COLUMNS = b"roastcoffea.json_columns"


def _rows(metrics: Mapping[str, Any], table: Table) -> list[dict[str, Any]]:
    if table == "chunks":
        return [dict(r) for r in metrics.get("raw_chunk_metrics") or ()]
    if table == "phases":
        return [dict(r) for r in metrics.get("raw_phase_records") or ()]
    if table == "workers":
        phases = metrics.get("phase_per_worker") or {}
        return [
            {"worker": worker, **row, "phase": dict(phases.get(worker) or {})}
            for worker, row in (metrics.get("per_worker") or {}).items()
        ]
    raise ValueError(f"no table {table!r}: choose 'chunks', 'phases' or 'workers'")


def to_pandas(metrics: Mapping[str, Any], table: Table = "chunks") -> pd.DataFrame:
    """One of the measurement's tables as a pandas DataFrame.

    Parameters
    ----------
    metrics : mapping
        A metrics dictionary, live or loaded.
    table : {"chunks", "phases", "workers"}
        Which table (see the module's description).

    Returns
    -------
    pandas.DataFrame
        One row per chunk, measured task or worker; no row without data.
    """
    import pandas as pd

    rows = _rows(metrics, table)
    return pd.json_normalize(rows, max_level=1) if rows else pd.DataFrame()


def to_arrow(metrics: Mapping[str, Any], table: Table = "chunks") -> pa.Table:
    """One of the measurement's tables as a pyarrow Table (columns as :func:`to_pandas`)."""
    import pyarrow as pa

    return pa.Table.from_pandas(to_pandas(metrics, table), preserve_index=False)


def _plain_type(values: Sequence[Any]) -> type | None:
    """The one plain type of the non-None ``values``, or None when they mix or nest."""
    kinds = {type(v) for v in values if v is not None}
    if len(kinds) == 1:
        (kind,) = kinds
        return kind if kind in _PLAIN else None
    return str if not kinds else None


def records_to_arrow(records: Sequence[Mapping[str, Any]]) -> pa.Table:
    """The records as a pyarrow Table that :func:`records_from_arrow` reads back exactly."""
    import pyarrow as pa

    from roastcoffea.measurement import to_tagged_json

    fields: dict[str, None] = {}
    for record in records:
        fields.update(dict.fromkeys(record))
    columns: dict[str, pa.Array] = {}
    as_json = []
    for field in fields:
        values = [record.get(field) for record in records]
        kind = _plain_type(values)
        if kind is None:
            as_json.append(field)
            text = [json.dumps(to_tagged_json(v), allow_nan=False) for v in values]
            columns[field] = pa.array(text, pa.string())
        else:
            columns[field] = pa.array(values, getattr(pa, _PLAIN[kind])())
    absent = [[f for f in fields if f not in record] for record in records]
    columns[ABSENT] = pa.array(absent, pa.list_(pa.string()))
    in_order = [[f for f in fields if f in record] for record in records]
    order = [None if list(r) == o else list(r) for r, o in zip(records, in_order, strict=True)]
    columns[ORDER] = pa.array(order, pa.list_(pa.string()))
    metadata = {_JSON_COLUMNS: json.dumps(as_json).encode()}
    return pa.table(columns).replace_schema_metadata(metadata)


def records_from_arrow(table: pa.Table) -> list[dict[str, Any]]:
    """The records a table of :func:`records_to_arrow` holds.

    Raises
    ------
    ValueError
        When the table is not one :func:`records_to_arrow` wrote.
    """
    from roastcoffea.measurement import from_tagged_json

    metadata = table.schema.metadata or {}
    if _JSON_COLUMNS not in metadata or not {ABSENT, ORDER} <= set(table.column_names):
        raise ValueError("not a table of roastcoffea records (no column list, _absent or _order)")
    as_json = set(json.loads(metadata[_JSON_COLUMNS]))
    records = []
    for row in table.to_pylist():
        absent = set(row.pop(ABSENT) or ())
        order = row.pop(ORDER)
        record = {
            field: from_tagged_json(json.loads(value)) if field in as_json else value
            for field, value in row.items()
            if field not in absent
        }
        records.append(record if order is None else {field: record[field] for field in order})
    return records


def write_parquet(records: Sequence[Mapping[str, Any]]) -> bytes:
    """The records as a Parquet file's bytes (zstd-compressed columns)."""
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(records_to_arrow(records), buffer, compression="zstd")
    return buffer.getvalue()


def read_parquet(data: bytes) -> list[dict[str, Any]]:
    """The records of a Parquet file written by :func:`write_parquet`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    # One thread: a read on Arrow's thread pool from memory left that pool's threads
    # joinable at interpreter exit, which then aborted ("terminate called without an
    # active exception") about one exit in three.
    return records_from_arrow(pq.read_table(pa.BufferReader(data), use_threads=False))
