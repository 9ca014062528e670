"""A Parquet file's footer read from its bytes, bounded, without Arrow's metadata objects.

Arrow checks a column chunk's metadata (its size statistics, its encryption) when it is
first asked for, and pyarrow's ``RowGroupMetaData.column`` declares that call as one
that never throws: a damaged footer makes Arrow throw through it, and the interpreter
aborts ("terminate called after throwing an instance of 'parquet::ParquetException'").
So the figures the bounds need are read here, from the footer's Thrift compact
protocol, and pyarrow is only asked to read the file, which reports Arrow's errors
as exceptions.

The reader is bounded: each container's size must fit the bytes left and all of them
together :data:`MAX_ITEMS`; structs nest at most :data:`MAX_DEPTH` deep.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from roastcoffea.formats.parquet_bounds import MAX_FOOTER_ITEMS, Refused

#: Entries of all the footer's containers together.
MAX_ITEMS = 1 << 20
#: Structs inside structs (a footer nests four: file, row group, column chunk, its metadata,
#: and their statistics).
MAX_DEPTH = 16

# Thrift compact protocol type ids.
_TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(1, 13)

#: Parquet's page encodings by their Thrift value (parquet.thrift, ``enum Encoding``).
ENCODING_NAMES = {
    0: "PLAIN",
    2: "PLAIN_DICTIONARY",
    3: "RLE",
    4: "BIT_PACKED",
    5: "DELTA_BINARY_PACKED",
    6: "DELTA_LENGTH_BYTE_ARRAY",
    7: "DELTA_BYTE_ARRAY",
    8: "RLE_DICTIONARY",
    9: "BYTE_STREAM_SPLIT",
}


@dataclass(frozen=True)
class ColumnChunk:
    """What the bounds read of one column chunk's metadata."""

    path: str
    encodings: frozenset[str]
    num_values: int
    uncompressed_bytes: int


@dataclass(frozen=True)
class Footer:
    num_rows: int
    columns: tuple[ColumnChunk, ...]


def read_footer(data: bytes) -> Footer:
    """The footer of the Parquet file ``data``.

    Raises
    ------
    Refused
        For a file without a footer, an encrypted one, or a footer that breaks the
        format or the bounds (the message says where).
    """
    if len(data) < 12 or data[:4] != b"PAR1":
        raise Refused("not a Parquet file: no PAR1 magic at its start")
    if data[-4:] == b"PARE":
        raise Refused("its footer is encrypted, which roastcoffea does not read")
    if data[-4:] != b"PAR1":
        raise Refused("not a Parquet file: no PAR1 magic at its end")
    length = int.from_bytes(data[-8:-4], "little")
    if length > len(data) - 12:
        raise Refused(f"its footer says {length:,} bytes, more than the file holds")
    meta = _Compact(data[-8 - length : -8]).struct(0)
    return Footer(_count(meta, 3, "num_rows"), tuple(_columns(meta)))


def _columns(meta: dict[int, Any]) -> list[ColumnChunk]:
    columns = []
    for group in _list(meta, 4, "row_groups"):
        for chunk in _list(_struct(group, "row group"), 1, "columns"):
            chunk = _struct(chunk, "column chunk")
            if 8 in chunk or 9 in chunk:
                raise Refused("a column chunk is encrypted, which roastcoffea does not read")
            columns.append(_chunk(_struct(chunk.get(3), "column chunk's metadata")))
    return columns


def _chunk(meta: dict[int, Any]) -> ColumnChunk:
    path = ".".join(_text(part) for part in _list(meta, 3, "path_in_schema"))
    encodings = set()
    for value in _list(meta, 2, "encodings"):
        if not isinstance(value, int) or value not in ENCODING_NAMES:
            raise Refused(f"column {path!r} names an unknown encoding")
        encodings.add(ENCODING_NAMES[value])
    return ColumnChunk(
        path,
        frozenset(encodings),
        _count(meta, 5, f"{path}: num_values"),
        _count(meta, 6, f"{path}: total_uncompressed_size"),
    )


def _struct(value: Any, what: str) -> dict[int, Any]:
    if not isinstance(value, dict):
        raise Refused(f"its footer has a {what} that is not a struct")
    return value


def _list(meta: dict[int, Any], field: int, what: str) -> list[Any]:
    value = meta.get(field, [])
    if not isinstance(value, list):
        raise Refused(f"its footer's {what} is not a list")
    return value


def _count(meta: dict[int, Any], field: int, what: str) -> int:
    value = meta.get(field)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise Refused(f"its footer's {what} is missing or negative")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, bytes):
        raise Refused("its footer has a column path that is not a string")
    return value.decode("utf-8", "replace")


class _Compact:
    """A bounded reader of Thrift's compact protocol: structs become {field id: value}."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.items = MAX_ITEMS

    def struct(self, depth: int) -> dict[int, Any]:
        if depth > MAX_DEPTH:
            raise Refused(f"its footer nests structs more than {MAX_DEPTH} deep")
        fields: dict[int, Any] = {}
        field = 0
        while (header := self._byte()) != 0:
            delta, kind = header >> 4, header & 0x0F
            field = field + delta if delta else self._zigzag()
            fields[field] = kind == _TRUE if kind in (_TRUE, _FALSE) else self._value(kind, depth)
        return fields

    def _value(self, kind: int, depth: int) -> Any:
        if kind in (_BYTE, _TRUE, _FALSE):  # a bool in a container is one byte
            return self._byte()
        if kind in (_I16, _I32, _I64):
            return self._zigzag()
        if kind == _DOUBLE:
            return self._take(8)
        if kind == _BINARY:
            return self._take(self._varint())
        if kind in (_LIST, _SET):
            header = self._byte()
            size = header >> 4 if header >> 4 != 15 else self._varint()
            self._count(size)
            return [self._value(header & 0x0F, depth + 1) for _ in range(size)]
        if kind == _MAP:
            size = self._varint()
            if size == 0:
                return {}
            kinds = self._byte()
            self._count(2 * size)
            return [
                (self._value(kinds >> 4, depth + 1), self._value(kinds & 0x0F, depth + 1))
                for _ in range(size)
            ]
        if kind == _STRUCT:
            return self.struct(depth + 1)
        raise Refused(f"its footer holds an unknown Thrift type {kind} at byte {self.pos:,}")

    def _count(self, size: int) -> None:
        """A container of ``size`` entries: each takes a byte at least, all fit the bounds."""
        self.items -= size
        if size > MAX_FOOTER_ITEMS or size > len(self.data) - self.pos or self.items < 0:
            raise Refused(f"its footer has a container of {size:,} entries at byte {self.pos:,}")

    def _byte(self) -> int:
        if self.pos >= len(self.data):
            raise Refused("its footer ends inside a value")
        self.pos += 1
        return self.data[self.pos - 1]

    def _take(self, size: int) -> bytes:
        if size > len(self.data) - self.pos:
            raise Refused(f"its footer ends inside a value of {size:,} bytes")
        self.pos += size
        return self.data[self.pos - size : self.pos]

    def _varint(self) -> int:
        value = shift = 0
        while True:
            byte = self._byte()
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise Refused(f"its footer has a varint over 10 bytes at byte {self.pos:,}")

    def _zigzag(self) -> int:
        value = self._varint()
        return (value >> 1) ^ -(value & 1)
