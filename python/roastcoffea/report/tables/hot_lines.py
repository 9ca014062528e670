"""The table of :mod:`roastcoffea.metrics.hot_lines`: the functions Dask's profiler saw most."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roastcoffea.report.tables.cells import Cell, Column, TableData, count, or_zero, percent

HOT_LINES_TITLE = "Hot Lines of the User's Code (Dask's profiler)"


def hot_lines_table(metrics: Mapping[str, Any]) -> TableData | None:
    """The user's functions taking most of the user-code samples, with their file:line."""
    lines = metrics.get("hot_lines")
    if not isinstance(lines, list) or not lines:
        return None
    columns = (
        Column("Function", fit="name"),
        Column("File:Line", fit="path"),
        Column("Own Share", numeric=True),
        Column("With Callees", numeric=True),
    )
    rows = tuple(
        (
            Cell(str(h["function"])),
            Cell(f"{h['file']}:{h['line']}"),
            Cell(percent(h["share_percent"])),
            Cell(percent(h["inclusive_percent"])),
        )
        for h in lines
    )
    samples = metrics.get("user_profile_samples")
    note = (
        f"Shares of the {count(round(or_zero(samples)))} samples Dask's profiler took in the "
        "user's own code (every 10 ms of each processor task; reading and building arrays "
        "excluded). Own: in the function itself and the native code it calls; with callees: "
        "also in the user's functions it calls. Line: the function's first line (Dask keys "
        "samples by function); <dynamic-code>: code pickled by value, as a notebook's."
    )
    return TableData(HOT_LINES_TITLE, columns, rows, note)
