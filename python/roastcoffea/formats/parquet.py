"""The chunk records as a Parquet file, read back exactly.

A field whose values all have one plain type (bool, int, float, str; None
allowed) is a typed column, any other one a column of its values as tagged JSON
text (:mod:`roastcoffea.formats.tagged_json`); ``_absent`` lists the fields a
record does not have and ``_order`` its fields' order where it is not the
columns'. So :func:`records_from_arrow` gives back the very records
:func:`records_to_arrow` was given, types included. pyarrow comes with the
``coffea`` and ``plot`` extras.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from roastcoffea.formats.tagged_json import from_tagged_json, to_tagged_json

if TYPE_CHECKING:
    import pyarrow as pa

#: Column of the fields a record lacks, and of its fields' order when not the columns'.
ABSENT = "_absent"
ORDER = "_order"
#: Plain types a field may have to be a typed column, and their Arrow types' names.
_PLAIN = {bool: "bool_", int: "int64", float: "float64", str: "string"}
#: Key of the Parquet file's metadata naming the columns held as tagged JSON text.
_JSON_COLUMNS = b"roastcoffea.json_columns"


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
