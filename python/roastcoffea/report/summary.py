"""The summary of a metrics dictionary for the terminal: the answer, then rich tables.

The answer (:mod:`roastcoffea.report.answer`: the headline and what to change first)
is laid out to fit one screen (:func:`answer_lines`); the content of every table comes
from :mod:`roastcoffea.report.tables`; this module only lays them out. A metric that
could not be measured shows as ``N/A (reason)`` (dimmed), bad news in red. The two
longest breakdowns (per worker, failed chunks) stop after :data:`MAX_ROWS` rows with a
``... N more`` row; the HTML report (:mod:`roastcoffea.report.html`) writes every row.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from roastcoffea.report import fit, tables
from roastcoffea.report.answer import Answer, answer
from roastcoffea.report.tables.cells import KV_COLUMNS, Cell, Column, TableData

#: Console width when printing to a pipe or file, so no column is cut.
WIDE = 120
#: Rows of the longest breakdowns (workers, failed chunks) before "... more".
MAX_ROWS = 20
#: Tables shortened to :data:`MAX_ROWS` rows in the terminal.
SHORTENED = (tables.WORKER_TABLE_TITLE, tables.FAILED_CHUNKS_TITLE)
#: The screen the answer fits when the output is not a terminal: 80 columns, 24 lines.
SCREEN = (80, 24)
#: The line that introduces the findings in the answer.
CHANGE_HEADING = "What to change, the largest wall time at stake first:"
#: Lines of a finding's cause in the answer before it is cut (the table has it whole).
CAUSE_LINES = 2


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


def answer_lines(found: Answer, width: int, height: int | None = None) -> list[Text]:
    """The answer as lines of at most ``width`` characters, in at most ``height`` lines.

    The headline and the first finding are always shown; the findings after it are
    left out, the last first, while the lines exceed ``height`` (a closing line
    counts them). Each finding's cause is cut after :data:`CAUSE_LINES` lines.
    """
    head = _wrapped(found.headline, width, style="bold")
    if found.shortfall is not None:
        head += _wrapped(found.shortfall, width, style="bold red")
    if found.empty is not None:
        return [*head, Text(), *_wrapped(found.empty, width)]
    blocks = [_finding_lines(i + 1, f, width) for i, f in enumerate(found.findings)]
    shown = len(blocks)
    while True:
        more = found.more + len(blocks) - shown
        tail = _wrapped(f"{more} more in the Diagnosis table.", width, "dim") if more else []
        lines = [*head, Text(), *_wrapped(CHANGE_HEADING, width)]
        lines += [line for block in blocks[:shown] for line in block] + tail
        if height is None or len(lines) <= height or shown <= 1:
            return lines
        shown -= 1


def _finding_lines(rank: int, finding: Any, width: int) -> list[Text]:
    """``N. <stake>: <what to change>``, then the cause indented, cut to CAUSE_LINES."""
    indent = " " * (len(str(rank)) + 2)
    change = textwrap.wrap(
        f"{rank}. {finding.stake}: {finding.change}", width, subsequent_indent=indent
    )
    lines = [safe_text(line) for line in change]
    lines[0].stylize("bold", len(str(rank)) + 2, len(str(rank)) + 2 + len(finding.stake))
    if finding.cause:
        cause = textwrap.wrap(finding.cause, width, initial_indent=indent, subsequent_indent=indent)
        if len(cause) > CAUSE_LINES:
            cause = cause[:CAUSE_LINES]
            cause[-1] = cause[-1][: width - 1].rstrip() + fit.ELLIPSIS
        lines += [safe_text(line, style="dim") for line in cause]
    return lines


def _wrapped(text: str, width: int, style: str = "") -> list[Text]:
    return [safe_text(line, style=style) for line in textwrap.wrap(text, width)]


def print_answer(metrics: Mapping[str, Any], console: Console, height: int | None = None) -> None:
    """Print the answer of ``metrics`` to fit ``console``'s width and ``height`` lines."""
    for line in answer_lines(answer(metrics), console.width, height):
        console.print(line, soft_wrap=True)


def summary_tables(metrics: Mapping[str, Any]) -> list[Table]:
    """Every table of the summary, in print order (breakdowns without data are left out)."""
    return [
        to_rich(table, MAX_ROWS if table.title in SHORTENED else None)
        for table in tables.build_tables(metrics)
    ]


def print_summary(
    metrics: Mapping[str, Any],
    console: Console | None = None,
    only: Sequence[str] | None = None,
) -> None:
    """Print the answer, then the tables, with a blank line between tables.

    Parameters
    ----------
    metrics : dict
        A metrics dictionary (``MetricsCollector.get_metrics()`` or a loaded
        measurement).
    console : rich.console.Console, optional
        Default: a console on stdout, 120 columns wide when stdout is not a
        terminal.
    only : sequence of str, optional
        The tables to print, by their names in :data:`~roastcoffea.report.tables.TABLE_NAMES`
        (the answer is left out); default the answer and every table.
    """
    if console is None:
        console = Console()
        if not console.is_terminal:
            console = Console(width=max(WIDE, console.width))
    chosen: list[RenderableType]
    if only is None:
        print_answer(metrics, console)
        console.print()
        chosen = list(summary_tables(metrics))
    else:
        chosen = [_named_table(metrics, name) for name in only]
    for table in chosen:
        console.print(table)
        console.print()


def _named_table(metrics: Mapping[str, Any], name: str) -> RenderableType:
    """The table called ``name``, or a line saying the measurement has no data for it."""
    table = tables.TABLE_NAMES[name](metrics)
    if table is None:
        return safe_text(f"{name}: no data in this measurement", style="dim")
    return to_rich(table)
