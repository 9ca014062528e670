"""The Parquet footer is read by roastcoffea's own bounded reader, never by Arrow's metadata
objects, which abort the interpreter on a damaged footer.

Checked against pyarrow's reading of good files, on the file that once aborted a load, and
with damaged footers from hypothesis: the reader returns or refuses, nothing else.
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roastcoffea.formats.parquet import write_parquet
from roastcoffea.formats.parquet_bounds import Refused
from roastcoffea.formats.parquet_footer import MAX_DEPTH, read_footer

#: A phases.parquet with three bits of its footer flipped (tests/data/README.md).
ABORTED = Path(__file__).parent / "data" / "parquet" / "histogram-mismatch.parquet"


def records(n: int) -> list[dict]:
    return [
        {"kind": "chunk", "v": 1, "task_key": f"p-{i}", "num_events": i, "duration": i / 7,
         "timing": {"jets": 0.1}, "accessed_branches": ["a", "b"][: i % 3], "unavailable": {}}
        for i in range(n)
    ]  # fmt: skip


def footer_of(data: bytes) -> bytes:
    length = int.from_bytes(data[-8:-4], "little")
    return data[-8 - length : -8]


def with_footer(data: bytes, footer: bytes) -> bytes:
    body = data[: -8 - int.from_bytes(data[-8:-4], "little")]
    return body + footer + len(footer).to_bytes(4, "little") + b"PAR1"


def test_the_footer_reads_as_arrow_reads_it() -> None:
    table = pa.table({"a": [1, 2, 3] * 100, "s": ["x", "yy", None] * 100, "l": [[1.0]] * 300})
    buffer = io.BytesIO()
    pq.write_table(table, buffer, row_group_size=128, use_dictionary=["s"])
    data = buffer.getvalue()
    footer, meta = read_footer(data), pq.ParquetFile(io.BytesIO(data)).metadata
    assert footer.num_rows == meta.num_rows == 300
    arrow = [
        meta.row_group(g).column(c)
        for g in range(meta.num_row_groups)
        for c in range(meta.row_group(g).num_columns)
    ]
    assert len(footer.columns) == len(arrow) == 9
    for ours, theirs in zip(footer.columns, arrow, strict=True):
        assert ours.path == theirs.path_in_schema
        assert ours.encodings == set(theirs.encodings)
        assert ours.num_values == theirs.num_values
        assert ours.uncompressed_bytes == theirs.total_uncompressed_size
    assert read_footer(write_parquet(records(50))).num_rows == 50


def test_a_footer_arrow_aborts_on_is_an_error_in_a_process_that_goes_on() -> None:
    script = (
        "import sys\n"
        "from roastcoffea.formats.parquet import read_parquet\n"
        "try:\n"
        f"    read_parquet(open({str(ABORTED)!r}, 'rb').read(), 1 << 30)\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr  # was 134: "terminate called after throwing"
    assert "histogram size mismatch" in done.stdout


@pytest.mark.parametrize(
    ("footer", "said"),
    [
        (bytes([0x19, 0xF5]) + b"\xff\xff\xff\x7f", "container of"),  # 2^28 entries
        (bytes([0x1C]) * (MAX_DEPTH + 2), "nests structs"),
        (bytes([0x15]), "ends inside a value"),
        (bytes([0x1D]), "unknown Thrift type 13"),
        (bytes([0x16]) + b"\xff" * 11, "varint over 10 bytes"),
        (bytes([0x36, 0x01, 0x00]), "num_rows is missing or negative"),
        (bytes([0x36, 0x02, 0x19, 0x1C, 0x19, 0x1C, 0, 0, 0]), "column chunk's metadata"),
    ],
)
def test_a_damaged_footer_is_refused_saying_where(footer: bytes, said: str) -> None:
    data = with_footer(write_parquet(records(3)), footer)
    with pytest.raises(Refused, match=said):
        read_footer(data)


def test_files_that_are_not_ours_to_read_are_refused() -> None:
    good = write_parquet(records(3))
    with pytest.raises(Refused, match="encrypted"):
        read_footer(good[:-4] + b"PARE")
    with pytest.raises(Refused, match="no PAR1 magic"):
        read_footer(b"PAR2" + good[4:])
    with pytest.raises(Refused, match="more than the file holds"):
        read_footer(good[:-8] + (1 << 30).to_bytes(4, "little") + b"PAR1")


GOOD = write_parquet(records(40))


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(1, 255)), max_size=8))
def test_flipped_footer_bytes_read_or_are_refused(flips: list[tuple[int, int]]) -> None:
    footer = bytearray(footer_of(GOOD))
    for at, mask in flips:
        footer[at % len(footer)] ^= mask
    try:
        read_footer(with_footer(GOOD, bytes(footer)))
    except Refused as exc:
        assert "\n" not in str(exc)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(footer=st.binary(max_size=512))
def test_any_footer_bytes_read_or_are_refused(footer: bytes) -> None:
    try:
        read_footer(with_footer(GOOD, footer))
    except Refused as exc:
        assert "\n" not in str(exc)
