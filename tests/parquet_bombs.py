"""Crafted ``chunks.parquet`` files: small on disk, large (or wrong) once decoded.

Each maker returns the file's bytes. The files carry the ``roastcoffea.records``
metadata, so what refuses them is the bound, not a missing description.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable

import pyarrow as pa
import pyarrow.parquet as pq

from roastcoffea.formats.parquet import RECORDS_KEY

DESCRIBED = {"envelope": {"kind": "chunk", "v": 1}, "json_columns": [], "irregular": []}


def _described(table: pa.Table, json_columns: tuple[str, ...] = ()) -> pa.Table:
    described = {**DESCRIBED, "json_columns": list(json_columns)}
    return table.replace_schema_metadata({RECORDS_KEY: json.dumps(described).encode()})


def _write(table: pa.Table, **options: object) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd", **options)
    return buffer.getvalue()


def dictionary_bomb() -> bytes:
    """One 1 MiB string, named by 3,000 rows from a dictionary page: 3 GB in 800 bytes."""
    return _write(_repeated_string(), dictionary_pagesize_limit=2 << 20)


def string_bomb() -> bytes:
    """The same 3,000 strings stored plainly, which zstd makes a few hundred kilobytes."""
    return _write(_repeated_string(), use_dictionary=False)


def _repeated_string() -> pa.Table:
    one = pa.array(["x" * (1 << 20)])
    return _described(pa.table({"file": pa.chunked_array([one] * 3000)}))  # views of one buffer


def row_bomb() -> bytes:
    """20 million rows of zeros in twenty row groups, a few hundred kilobytes."""
    group = _described(pa.table({"num_events": pa.array([0] * 1_000_000, pa.int64())}))
    buffer = io.BytesIO()
    with pq.ParquetWriter(buffer, group.schema, compression="zstd") as writer:
        for _ in range(20):
            writer.write_table(group)
    return buffer.getvalue()


def list_bomb() -> bytes:
    """One row whose list holds 40 million nulls: bitmaps on disk, pointers in Python."""
    n = 40_000_000
    values = pa.ListArray.from_arrays(pa.array([0, n], pa.int32()), pa.nulls(n, pa.bool_()))
    return _write(_described(pa.table({"flags": values})))


def json_bomb(rows: int = 16, units: int = 20_000) -> bytes:
    """A tagged JSON column of lists in lists, 90 deep: two characters each, 80 bytes in
    Python."""
    text = "[" + ",".join(["[" * 90 + "]" * 90] * units) + "]"
    column = pa.array([text] * rows, pa.string())
    return _write(_described(pa.table({"odd": column}), json_columns=("odd",)))


def prefix_bomb() -> bytes:
    """Strings stored as shared prefixes (DELTA_BYTE_ARRAY), which expand past their pages."""
    table = _described(pa.table({"file": pa.array(["/data/" + "x" * 64] * 100)}))
    return _write(table, use_dictionary=False, column_encoding={"file": "DELTA_BYTE_ARRAY"})


def timestamps() -> bytes:
    """A column of a type roastcoffea never writes."""
    column = pa.array([0, 1], pa.timestamp("s"))
    return _write(_described(pa.table({"t_start": column})))


def nested_map() -> bytes:
    """A struct holding a map, which roastcoffea never writes."""
    inner = pa.array([[("a", 1)]], pa.map_(pa.string(), pa.int64()))
    return _write(_described(pa.table({"timing": pa.StructArray.from_arrays([inner], ["m"])})))


#: name: (maker, what the one-line refusal says)
BOMBS: dict[str, tuple[Callable[[], bytes], str]] = {
    "dictionary bomb": (dictionary_bomb, "its records would take"),
    "string bomb": (string_bomb, "its footer promises"),
    "row bomb": (row_bomb, "its footer promises"),
    "list bomb": (list_bomb, "its footer promises"),
    "json bomb": (json_bomb, "its records would take"),
    "prefix bomb": (prefix_bomb, "encoded as DELTA_BYTE_ARRAY"),
    "timestamps": (timestamps, "column 't_start' is of type timestamp[ms], which"),
    "nested map": (nested_map, "column 'timing.m' is of type map, which"),
}
