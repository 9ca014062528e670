"""The chunk records as a Parquet file of Arrow types, read back exactly.

Each field is a column of the Arrow type its values share, all the way down: bool,
int64, float64, string; a list the list of its elements' type; a dict of string keys
a struct of the keys of every row; None is null. So awkward, pandas and pyarrow read
records, lists and numbers (``ak.from_parquet(path).timing.jets``). A field whose
values share no such type (ints and floats mixed, tuples, datetimes, keys that are not
strings, more than :data:`MAX_STRUCT_FIELDS` keys: keys that are data) is a column of
tagged JSON text (:mod:`roastcoffea.formats.tagged_json`). No map type: awkward does
not read Arrow maps from Parquet.

What the columns cannot say is in the file's metadata (``roastcoffea.records``): the
fields every record has with one value (the record's ``kind`` and version ``v``), the
tagged JSON columns, and the rare rows where a key is absent rather than None or the
keys come in another order than the columns'. So :func:`records_from_arrow` gives back
the very records :func:`records_to_arrow` was given, types and key order included.
pyarrow comes with the ``coffea`` and ``plot`` extras.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from roastcoffea.formats.schema import MAX_DEPTH
from roastcoffea.formats.tagged_json import from_tagged_json, to_tagged_json

if TYPE_CHECKING:
    import pyarrow as pa

#: Key of the file's metadata: the envelope, the tagged JSON columns, the irregular rows.
RECORDS_KEY = b"roastcoffea.records"
#: Fields that, with one value in every record, go to the metadata rather than a column.
ENVELOPE = ("kind", "v")
#: Most keys of a struct; a dict field with more (keys that are data) is tagged JSON.
MAX_STRUCT_FIELDS = 256
#: Largest int an int64 column holds.
_INT64 = (-(2**63), 2**63 - 1)


def records_to_arrow(records: Sequence[Mapping[str, Any]]) -> pa.Table:
    """The records as a pyarrow Table that :func:`records_from_arrow` reads back exactly."""
    import pyarrow as pa

    fields: dict[str, None] = {}
    for record in records:
        fields.update(dict.fromkeys(record))
    envelope = _envelope(records)
    if not set(fields) - set(envelope):
        raise ValueError("records without a field beyond kind and v: no column to hold them")
    columns: dict[str, pa.Array] = {}
    as_json = []
    for field in fields:
        if field in envelope:
            continue
        values = [record.get(field) for record in records]
        kind = _arrow_type(values)
        if kind is None:
            as_json.append(field)
            text = [json.dumps(to_tagged_json(v), allow_nan=False) for v in values]
            columns[field] = pa.array(text, pa.string())
        else:
            columns[field] = pa.array(values, kind)
    table = pa.table(columns)
    kept = [f for f in fields if f not in envelope]
    irregular = [
        [row, shape]
        for row, record in enumerate(records)
        if (shape := _irregular(record, kept, list(envelope), table.schema, set(as_json)))
    ]
    described = {"envelope": envelope, "json_columns": as_json, "irregular": irregular}
    metadata = {RECORDS_KEY: json.dumps(described, allow_nan=False).encode()}
    return table.replace_schema_metadata(metadata)


def records_from_arrow(table: pa.Table) -> list[dict[str, Any]]:
    """The records a table of :func:`records_to_arrow` holds.

    Raises
    ------
    ValueError
        When the table is not one :func:`records_to_arrow` wrote, naming what is wrong.
    """
    described = _described(table)
    envelope, as_json = described["envelope"], set(described["json_columns"])
    if not as_json <= set(table.column_names):
        raise ValueError("roastcoffea.records: json_columns names a column the table lacks")
    records = []
    for row in table.to_pylist():
        for name in as_json:
            row[name] = from_tagged_json(json.loads(row[name]))
        records.append({**envelope, **row})
    for entry in described["irregular"]:
        _apply_irregular(records, entry)
    return records


def _described(table: pa.Table) -> dict[str, Any]:
    """The file's own description of its records (``roastcoffea.records``), checked."""
    metadata = table.schema.metadata or {}
    if RECORDS_KEY not in metadata:
        raise ValueError("not a table of roastcoffea records (no roastcoffea.records metadata)")
    described = json.loads(metadata[RECORDS_KEY])
    shapes = {"envelope": dict, "json_columns": list, "irregular": list}
    if not isinstance(described, dict) or not all(
        isinstance(described.get(key), kind) for key, kind in shapes.items()
    ):
        raise ValueError("roastcoffea.records: not an object of envelope, json_columns, irregular")
    return described


def write_parquet(records: Sequence[Mapping[str, Any]]) -> bytes:
    """The records as a Parquet file's bytes (zstd-compressed columns)."""
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(records_to_arrow(records), buffer, compression="zstd")
    return buffer.getvalue()


def read_parquet(data: bytes, limit: int) -> list[dict[str, Any]]:
    """The records of a Parquet file written by :func:`write_parquet`.

    The file may come from anywhere: what it decodes to is bounded by ``limit``
    bytes of Python records, checked before it is decoded
    (:mod:`roastcoffea.formats.parquet_bounds`).

    Raises
    ------
    roastcoffea.formats.parquet_bounds.Refused
        For a file beyond the limit or of columns roastcoffea does not write.
    ValueError
        For a file that is not one of records (Arrow's errors among them).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from roastcoffea.formats import parquet_bounds as bounds
    from roastcoffea.formats.parquet_footer import read_footer

    footer = read_footer(data)  # before Arrow's own metadata objects, which abort on damage
    source = pa.BufferReader(data)
    file = pq.ParquetFile(source, thrift_container_size_limit=bounds.MAX_FOOTER_ITEMS)
    schema = file.schema_arrow
    bounds.check_footer(footer, schema, limit)
    file = pq.ParquetFile(
        source,
        read_dictionary=bounds.string_columns(file),
        thrift_container_size_limit=bounds.MAX_FOOTER_ITEMS,
    )
    # One thread: a read on Arrow's thread pool from memory left that pool's threads
    # joinable at interpreter exit, which then aborted ("terminate called without an
    # active exception") about one exit in three.
    table = file.read(use_threads=False)
    described = _described(table)
    bounds.check_decoded(table, len(described["envelope"]), set(described["json_columns"]), limit)
    # Within the limit: the strings are decoded in Arrow, where making them Python
    # objects is eight times faster than from a dictionary.
    return records_from_arrow(table.cast(schema))


# ---- types --------------------------------------------------------------------------


def _envelope(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The envelope fields every record has first, with one plain value each."""
    if not records:
        return {}
    first = records[0]
    out = {}
    for i, field in enumerate(ENVELOPE):
        value = first.get(field)
        plain = isinstance(value, (str, int)) and not isinstance(value, bool)
        if not plain or any(
            list(r)[i : i + 1] != [field] or r[field] != value or type(r[field]) is not type(value)
            for r in records
        ):
            break
        out[field] = value
    return out


def _arrow_type(values: Sequence[Any], depth: int = 0) -> pa.DataType | None:
    """The one Arrow type of the non-None ``values``, or None when they share none."""
    import pyarrow as pa

    present = [v for v in values if v is not None]
    kinds = {type(v) for v in present}
    if not kinds:
        return pa.string()
    if len(kinds) > 1 or depth >= MAX_DEPTH:
        return None
    (kind,) = kinds
    if kind is bool:
        return pa.bool_()
    if kind is int:
        return pa.int64() if all(_INT64[0] <= v <= _INT64[1] for v in present) else None
    if kind is float:
        return pa.float64()
    if kind is str:
        return pa.string()
    if kind is list:
        item = _arrow_type([x for v in present for x in v], depth + 1)
        return None if item is None else pa.list_(item)
    if kind is dict and all(isinstance(k, str) for v in present for k in v):
        return _dict_type(present, depth)
    return None


def _dict_type(dicts: Sequence[dict[str, Any]], depth: int) -> pa.DataType | None:
    """A struct of the dicts' keys; None when their values differ or the keys are many."""
    import pyarrow as pa

    keys: dict[str, None] = {}
    for d in dicts:
        keys.update(dict.fromkeys(d))
    if not keys or len(keys) > MAX_STRUCT_FIELDS:
        return None  # Parquet holds no struct without fields; many keys are data
    children = []
    for key in keys:
        child = _arrow_type([d[key] for d in dicts if key in d], depth + 1)
        if child is None:
            return None
        children.append(pa.field(key, child))
    return pa.struct(children)


# ---- the rows the columns cannot say ----------------------------------------------


def _irregular(
    record: Mapping[str, Any],
    fields: list[str],
    envelope: list[str],
    schema: pa.Schema,
    as_json: set[str],
) -> dict[str, Any]:
    """The absent keys and reordered dicts of ``record``, as paths; empty when regular."""
    absent: list[list[Any]] = [[f] for f in fields if f not in record]
    order: list[list[Any]] = []
    present = envelope + [f for f in fields if f in record]
    if list(record) != present:
        order.append([[], list(record)])
    for field in fields:
        if field in record and field not in as_json:
            _walk(record[field], schema.field(field).type, [field], absent, order)
    return {k: v for k, v in (("absent", absent), ("order", order)) if v}


def _walk(value: Any, kind: pa.DataType, path: list[Any], absent: list, order: list) -> None:
    import pyarrow as pa

    if value is None:
        return
    if pa.types.is_struct(kind):
        names = [f.name for f in kind]
        absent += [[*path, n] for n in names if n not in value]
        if list(value) != [n for n in names if n in value]:
            order.append([path, list(value)])
        for f in kind:
            if f.name in value:
                _walk(value[f.name], f.type, [*path, f.name], absent, order)
    elif pa.types.is_list(kind):
        for i, item in enumerate(value):
            _walk(item, kind.value_type, [*path, i], absent, order)


def _apply_irregular(records: list[dict[str, Any]], entry: Any) -> None:
    """Remove the absent keys of one row and put its dicts' keys back in order."""
    try:
        row, shape = entry
        record = records[row]
        for path in shape.get("absent", ()):
            del _at(record, path[:-1])[path[-1]]
        for path, keys in shape.get("order", ()):
            target = _at(record, path)
            reordered = {k: target[k] for k in keys}
            if len(reordered) != len(target):
                raise ValueError(f"the order names {len(keys)} of {len(target)} keys")
            target.clear()
            target.update(reordered)
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise ValueError(f"roastcoffea.records: irregular row {entry!r:.80}: {exc}") from None


def _at(value: Any, path: Sequence[Any]) -> Any:
    for step in path:
        value = value[step]
    return value
