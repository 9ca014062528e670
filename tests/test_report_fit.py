"""Tables on a narrow terminal: names stay apart, a file:line keeps its file and line."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from roastcoffea.report.fit import cut, name_cells
from roastcoffea.report.summary import to_rich
from roastcoffea.report.tables.cells import Cell, Column, TableData
from roastcoffea.report.tables.hot_lines import hot_lines_table


def first_column(table: TableData, width: int) -> list[str]:
    """The first column's cells as a console ``width`` wide draws them."""
    console = Console(width=width, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(to_rich(table))
    lines = console.export_text().splitlines()
    cells = [line.split("│")[1].strip() for line in lines if line.startswith("│")]
    return [cell for cell in cells if cell]  # a row's wrapped lines leave it empty


def files_table(names: list[str]) -> TableData:
    columns = (Column("File", fit="name"), *(Column(f"Figure {i}", numeric=True) for i in "123"))
    rows = tuple((Cell(n), Cell("495.02 kiB"), Cell("54.44 kiB"), Cell("16.33 MiB")) for n in names)
    return TableData("Files", columns, rows)


def test_names_cut_where_they_agree_stay_apart() -> None:
    names = [f"nano_{i:03d}.root" for i in range(8)]
    for width in (40, 34, 30):
        shown = first_column(files_table(names), width)
        assert len(set(shown)) == len(names), (width, shown)
        assert all("…" in name for name in shown), (width, shown)
    assert first_column(files_table(names), 120) == names  # whole when they fit


def test_a_cut_keeps_the_distinct_part_and_marks_each_cut() -> None:
    cells = name_cells([Text(n) for n in ("run-2026-12-01-dy.root", "run-2026-12-01-ttbar.root")])
    assert [(c.shared_start, c.shared_end) for c in cells] == [(15, 5), (15, 5)]
    for cell, core in zip(cells, ("dy", "ttbar"), strict=True):
        for width in range(len(core) + 2, len(cell.text.plain) + 1):
            shown = cut(cell.text, width, cell.shared_start, cell.shared_end).plain
            assert len(shown) <= width and core in shown, (width, shown)
            assert ("…" in shown) == (width < len(cell.text.plain))


def test_a_hot_lines_file_and_line_stay_whole(metrics: dict[str, Any]) -> None:
    table = hot_lines_table(metrics)
    assert table is not None
    console = Console(width=80, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(to_rich(table))
    text = console.export_text()
    for line in metrics["hot_lines"]:
        assert f"{line['file'].rsplit('/', 1)[-1]}:{line['line']}" in text
