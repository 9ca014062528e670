"""The table of :mod:`roastcoffea.metrics.reads`: the shape of the reads per file."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roastcoffea.report.tables.cells import (
    Cell,
    Column,
    TableData,
    count,
    number,
    percent,
    short_file,
    show,
)
from roastcoffea.units import format_bytes, format_number, units_word

READS_TITLE = "Shape of the Reads per File"


def reads_table(metrics: Mapping[str, Any]) -> TableData | None:
    """Per file: requests, their size, the metadata fetched at every open, amplification."""
    shapes = metrics.get("read_shapes")
    if not isinstance(shapes, Mapping) or not shapes:
        return None
    units = " or ".join(sorted({str(s.get("storage_unit") or "basket") for s in shapes.values()}))
    used = units_word(units).capitalize()
    names = ("Chunks", "Req./Chunk", "Bytes/Req.", "Open/Chunk", used, "Metadata", "Amplif.")
    columns = (Column("File", fit="name"), *(Column(name, numeric=True) for name in names))
    rows = []
    for name, shape in shapes.items():
        spread = shape.get("bytes_per_request") or {}
        chunks, opened = shape.get("chunks"), shape.get("open_bytes")
        per_chunk = opened / chunks if chunks and opened is not None else None
        rows.append(
            (
                Cell(short_file(name) + (" (remote)" if shape.get("remote") else "")),
                show(chunks, count, "not recorded"),
                show(shape.get("requests_per_chunk"), format_number, "not recorded"),
                show(spread.get("median"), format_bytes, "no request"),
                show(per_chunk, format_bytes, "not recorded"),
                show(shape.get("basket_bytes"), format_bytes, "not recorded"),
                show(shape.get("metadata_percent"), percent, "no byte fetched"),
                show(shape.get("amplification"), number(2, "x"), f"no {units_word(units)} used"),
            )
        )
    note = (
        "Req.: uproot's num_requests of the tasks (a vectored read of several ranges is one); "
        "bytes per request: the median chunk's. Open: bytes fetched before process() (the "
        f"file and its tree's metadata), again at every chunk. {used}: bytes of the "
        f"{units_word(units)} the chunks used; metadata: the open's share of the bytes "
        f"fetched; amplification: bytes fetched after the open per byte of those "
        f"{units_word(units)}."
    )
    return TableData(READS_TITLE, columns, tuple(rows), note)
