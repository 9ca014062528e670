"""The summary of a metrics dictionary as rich tables, for the terminal.

The content of every table comes from :mod:`roastcoffea.report.tables`; this
module only lays it out. A metric that could not be measured shows as
``N/A (reason)`` (dimmed), bad news in red. The two longest breakdowns (per
worker, failed chunks) stop after :data:`MAX_ROWS` rows with a ``... N more``
row; the HTML report (:mod:`roastcoffea.report.html`) writes every row.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from roastcoffea.report import fit, tables
from roastcoffea.report.tables.cells import KV_COLUMNS, Cell, Column, TableData

#: Console width when printing to a pipe or file, so no column is cut.
WIDE = 120
#: Rows of the longest breakdowns (workers, failed chunks) before "... more".
MAX_ROWS = 20
#: Tables shortened to :data:`MAX_ROWS` rows in the terminal.
SHORTENED = (tables.WORKER_TABLE_TITLE, tables.FAILED_CHUNKS_TITLE)


#: C0 and C1 control characters, shown escaped so outside text cannot drive the terminal.
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))}


def printable(value: Any) -> str:
    """``str(value)`` with its control characters escaped (``\\x1b``), for a terminal."""
    return str(value).translate(_CONTROLS)


def safe_text(value: Any, style: str = "") -> Text:
    """Outside text (names, addresses, errors) as rich text: never parsed as markup."""
    return Text(printable(value), style=style)


def _text(cell: Cell) -> Text:
    """A cell as rich text (worker addresses, errors and names may hold brackets)."""
    if cell.missing:
        return safe_text(f"{cell.text} ({cell.reason})", style="dim")
    prefix = "  " * cell.indent + ("• " if cell.indent else "")
    return safe_text(prefix + cell.text, style="red" if cell.alert else "")


def to_rich(table: TableData, max_rows: int | None = None) -> Table:
    """``table`` as a rich :class:`~rich.table.Table`.

    Parameters
    ----------
    table : TableData
        The table's content.
    max_rows : int, optional
        Rows shown before a final ``... N more`` row; default all of them.

    Returns
    -------
    rich.table.Table
    """
    key_value = table.columns == KV_COLUMNS
    style = "bold red" if table.title == tables.FAILED_CHUNKS_TITLE else "bold cyan"
    caption = None if table.note is None else safe_text(table.note)
    out = Table(title=table.title, header_style=style, caption=caption)
    for i, column in enumerate(table.columns):
        if key_value:
            out.add_column(
                safe_text(column.name), style="cyan" if i == 0 else "magenta", no_wrap=i == 0
            )
        else:
            out.add_column(safe_text(column.name), justify="right" if column.numeric else "left")
    rows = table.rows
    if max_rows is not None and len(rows) > max_rows:
        rows = rows[:max_rows]
    for row in _fitted(table.columns, rows):
        out.add_row(*row)
    if len(rows) < len(table.rows):
        more = f"... {len(table.rows) - len(rows)} more"
        out.add_row(more, *[""] * (len(table.columns) - 1))
    return out


def _fitted(
    columns: tuple[Column, ...], rows: tuple[tuple[Cell, ...], ...]
) -> list[list[RenderableType]]:
    """The rows' cells as rich text; the cells of name and path columns cut to fit."""
    out: list[list[RenderableType]] = [[_text(cell) for cell in row] for row in rows]
    for i, column in enumerate(columns):
        if column.fit == "wrap":
            continue
        shown = [r for r, row in enumerate(rows) if not row[i].missing]
        texts = [_text(rows[r][i]) for r in shown]
        cells = (fit.name_cells if column.fit == "name" else fit.path_cells)(texts)
        for r, cell in zip(shown, cells, strict=True):
            out[r][i] = cell
    return out


def summary_tables(metrics: Mapping[str, Any]) -> list[Table]:
    """Every table of the summary, in print order (breakdowns without data are left out)."""
    return [
        to_rich(table, MAX_ROWS if table.title in SHORTENED else None)
        for table in tables.build_tables(metrics)
    ]


def print_summary(metrics: Mapping[str, Any], console: Console | None = None) -> None:
    """Print :func:`summary_tables` with a blank line between tables.

    Parameters
    ----------
    metrics : dict
        A metrics dictionary (``MetricsCollector.get_metrics()`` or a loaded
        measurement).
    console : rich.console.Console, optional
        Default: a console on stdout, 120 columns wide when stdout is not a
        terminal.
    """
    if console is None:
        console = Console()
        if not console.is_terminal:
            console = Console(width=max(WIDE, console.width))
    for table in summary_tables(metrics):
        console.print(table)
        console.print()
