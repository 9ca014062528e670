"""What a Parquet file of records may decode to, checked before it is decoded.

A file of a few kilobytes can describe gigabytes: one long string a dictionary page
holds once and three thousand rows name, or twenty million rows of nulls that zstd
makes nothing of. So a file from elsewhere is read in three steps, each bounded by
the one before:

1. the footer (read by :mod:`roastcoffea.formats.parquet_footer`, bounded) is
   checked: the Arrow types are the ones :mod:`roastcoffea.formats.parquet` writes,
   every page encoding is one that does not expand beyond its uncompressed size (no
   prefix-shared strings), and the footer's rows, values and uncompressed sizes give
   Python records within the limit;
2. the columns are read with their strings kept dictionary-encoded, so Arrow holds
   no more than the footer said;
3. the Python records those columns make are estimated from the Arrow arrays
   themselves (a dictionary's strings counted as often as rows name them) and
   checked against the limit before one record is made.

The estimate counts CPython's object sizes on a 64-bit build: a dict per record and
per struct value, a list per list value, a string's header and bytes, a number's
object. What passes costs at most about the limit; what fails costs no more than its
footer and dictionary pages.
"""

from __future__ import annotations

from collections.abc import Set
from typing import TYPE_CHECKING

from dask.utils import format_bytes

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from roastcoffea.formats.parquet_footer import Footer


class Refused(ValueError):
    """A file refused before it is decoded; the message says why, without its content."""


#: Most entries of one thrift list in a footer (columns, row groups, key-value pairs).
MAX_FOOTER_ITEMS = 1 << 16
#: Page encodings that decode to at most their uncompressed size plus their values' width.
ENCODINGS = frozenset({"PLAIN", "PLAIN_DICTIONARY", "RLE_DICTIONARY", "RLE", "BIT_PACKED"})

# CPython object sizes, in bytes, on a 64-bit build (sys.getsizeof, rounded up).
#: An empty dict, and what each key adds (its hash-table slot and entry).
DICT_BYTES = 232
KEY_BYTES = 48
#: A record is two dicts at once: the row to_pylist makes and the record it becomes.
RECORD_BYTES = 2 * DICT_BYTES
#: A float or int object; bools and None are shared.
NUMBER_BYTES = 32
#: A str object without its characters.
STRING_BYTES = 56
#: A list object without its items; each item is a pointer.
LIST_BYTES = 56
POINTER_BYTES = 8
#: Bytes of Python objects per character of tagged JSON text, at most: lists nested
#: one in another, ``[[[...]]]``, make about 82 (the parsed list and its copy).
JSON_EXPANSION = 96


def check_footer(footer: Footer, schema: pa.Schema, limit: int) -> None:
    """Refuse a file whose footer (:func:`~roastcoffea.formats.parquet_footer.read_footer`)
    and Arrow ``schema`` alone promise records beyond ``limit`` bytes.

    Raises
    ------
    Refused
        Naming the column, the encoding or the size, and the limit.
    """
    for field in schema:
        _check_type(field.type, field.name)
    values = uncompressed = 0
    for column in footer.columns:
        unknown = column.encodings - ENCODINGS
        if unknown:
            raise Refused(
                f"column {column.path!r} is encoded as "
                f"{', '.join(sorted(unknown))}, which roastcoffea does not read"
            )
        values += column.num_values
        uncompressed += column.uncompressed_bytes
    promised = footer.num_rows * RECORD_BYTES + values * NUMBER_BYTES + uncompressed
    _check_size(promised, limit, "its footer promises", footer.num_rows)


def string_columns(file: pq.ParquetFile) -> list[str]:
    """The column paths of the file's strings, to read them dictionary-encoded."""
    schema = file.metadata.schema
    return [
        schema.column(i).path
        for i in range(len(schema))
        if schema.column(i).physical_type == "BYTE_ARRAY"
    ]


def check_decoded(table: pa.Table, envelope: int, json_columns: Set[str], limit: int) -> None:
    """Refuse a table whose records, once made, would take more than ``limit`` bytes.

    Raises
    ------
    Refused
        Naming the estimate and the limit.
    """
    size = decoded_bytes(table, envelope, json_columns)
    _check_size(size, limit, "its records would take", table.num_rows)


def decoded_bytes(table: pa.Table, envelope: int, json_columns: Set[str]) -> int:
    """What the table's records take as Python objects, estimated from above, in bytes.

    ``envelope`` is the number of fields every record gets from the file's metadata;
    ``json_columns`` hold tagged JSON text, counted as the objects it can parse into.
    """
    size = table.num_rows * 2 * (DICT_BYTES + KEY_BYTES * (table.num_columns + envelope))
    for name in table.column_names:
        for chunk in table.column(name).chunks:
            size += _json_bytes(chunk) if name in json_columns else _array_bytes(chunk)
    return size


def _json_bytes(array: pa.Array) -> int:
    """What a column of tagged JSON text parses into: its texts and their objects."""
    return len(array) * STRING_BYTES + _characters(array) * (1 + JSON_EXPANSION)


def _characters(array: pa.Array) -> int:
    """The characters of a string array's values, a dictionary's counted as often as named."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(array.type):
        lengths = pc.take(pc.binary_length(array.dictionary), array.indices)
    else:
        lengths = pc.binary_length(array)
    return pc.sum(lengths).as_py() or 0


def _check_type(kind: pa.DataType, path: str) -> None:
    """Refuse an Arrow type :mod:`roastcoffea.formats.parquet` never writes."""
    import pyarrow as pa

    if pa.types.is_struct(kind):
        for child in kind:
            _check_type(child.type, f"{path}.{child.name}")
    elif pa.types.is_list(kind):
        _check_type(kind.value_type, f"{path}[]")
    elif not (
        pa.types.is_boolean(kind) or kind in (pa.int64(), pa.float64(), pa.string(), pa.null())
    ):
        name = str(kind).split("<")[0]
        raise Refused(f"column {path!r} is of type {name}, which roastcoffea does not write")


def _array_bytes(array: pa.Array) -> int:
    """The Python objects ``array.to_pylist()`` makes, in bytes (an estimate from above)."""
    import pyarrow as pa

    n = len(array)
    kind = array.type
    if pa.types.is_dictionary(kind) or pa.types.is_string(kind):
        return n * STRING_BYTES + _characters(array)
    if pa.types.is_list(kind):
        values = array.flatten()
        return n * LIST_BYTES + len(values) * POINTER_BYTES + _array_bytes(values)
    if pa.types.is_struct(kind):
        fields = sum(_array_bytes(array.field(i)) for i in range(kind.num_fields))
        return n * (DICT_BYTES + KEY_BYTES * kind.num_fields) + fields
    if pa.types.is_boolean(kind) or pa.types.is_null(kind):
        return 0
    return n * NUMBER_BYTES


def _check_size(size: int, limit: int, what: str, rows: int) -> None:
    if size > limit:
        raise Refused(
            f"{what} {format_bytes(size)} for {rows:,} row{'' if rows == 1 else 's'}, "
            f"above the limit of {format_bytes(limit)} "
            "(setting roastcoffea.max-records-bytes)"
        )
