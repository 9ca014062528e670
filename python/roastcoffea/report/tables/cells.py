"""What every table is made of: cells, columns, titled tables, and the formatting they share.

A builder (one module beside each metrics module) takes a metrics dictionary and
returns a :class:`TableData`; the text of every cell is decided once, here and in
the builders, and the renderers only lay it out. A metric that could not be
measured is a missing cell (:attr:`Cell.reason` set, text ``N/A``), the reason
taken from ``metrics["unavailable"]``; bad news is an alert cell.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeGuard

from roastcoffea.units import (
    format_byte_rate,
    format_bytes,
    format_percent,
    format_rate,
    format_time,
)

Formatter = Callable[[Any], str]

#: Text of a missing cell.
NA = "N/A"


@dataclass(frozen=True)
class Cell:
    """One table cell.

    Attributes
    ----------
    text : str
        What the cell shows (``N/A`` when missing).
    reason : str or None
        Why the value is missing; None for a value.
    alert : bool
        The value is bad news (a failure, a loss).
    indent : int
        Nesting level of a row label under the row above it.
    """

    text: str
    reason: str | None = None
    alert: bool = False
    indent: int = 0

    @property
    def missing(self) -> bool:
        """Whether the value could not be measured."""
        return self.reason is not None


@dataclass(frozen=True)
class Column:
    """A column heading; ``numeric`` columns are right-aligned.

    ``fit`` says how its cells fit a narrow terminal: ``"wrap"`` (text, over lines),
    ``"name"`` (names, cut where they agree so that they stay apart) or ``"path"``
    (``file:line``, cut at its start so that the file and line stay whole).
    """

    name: str
    numeric: bool = False
    fit: Literal["wrap", "name", "path"] = "wrap"


@dataclass(frozen=True)
class TableData:
    """A titled table: columns, rows of cells, and an optional note under it.

    Raises
    ------
    ValueError
        When a row does not have one cell per column.
    """

    title: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Cell, ...], ...]
    note: str | None = None

    def __post_init__(self) -> None:
        for row in self.rows:
            if len(row) != len(self.columns):
                raise ValueError(
                    f"table {self.title!r}: a row has {len(row)} cells for "
                    f"{len(self.columns)} columns"
                )


def number(digits: int = 2, suffix: str = "") -> Formatter:
    """A formatter of numbers with thousands separators, ``digits`` decimals and a suffix."""
    return lambda v: f"{v:,.{digits}f}{suffix}"


def khz(value: Any) -> str:
    """A rate given in kHz, written in the unit its magnitude calls for."""
    return format_rate(1e3 * value)


def per_core(value: Any) -> str:
    """A rate per core given in Hz, written in the unit its magnitude calls for."""
    return format_rate(value, "/core")


def microseconds(value: Any) -> str:
    """A duration given in microseconds, written as Dask writes durations."""
    return format_time(value * 1e-6)


def count(value: Any) -> str:
    """An integer with thousands separators."""
    return f"{int(value):,}"


def percent(value: Any) -> str:
    """A percentage given in percent: ``12.3%``."""
    return format_percent(value)


def nanoseconds(value: Any) -> str:
    """A duration given in nanoseconds, written as every duration is."""
    return format_time(value / 1e9)


def mib(value: Any) -> str:
    """An amount given in MiB, written in the unit its magnitude calls for."""
    return format_bytes(value * 2**20)


def mb_per_second(value: Any) -> str:
    """A rate given in decimal MB/s, written in binary units per second."""
    return format_byte_rate(1e6 * value)


def fraction(value: Any) -> str:
    """A fraction shown as a percentage: ``0.123`` is ``12.3%``."""
    return f"{value:.1%}"


def is_number(value: Any) -> TypeGuard[float]:
    """Whether ``value`` is an int or float (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def missing(reason: str) -> Cell:
    """A cell for a value that could not be measured, and why."""
    return Cell(NA, reason=reason)


def show(value: Any, fmt: Formatter, reason: str = "not measured") -> Cell:
    """``value`` formatted, or a missing cell when it is None or not finite."""
    if value is None:
        return missing(reason)
    if isinstance(value, float) and not math.isfinite(value):
        return missing("not a finite number")
    try:
        return Cell(fmt(value))
    except (TypeError, ValueError):
        return Cell(str(value))


def value_cell(metrics: Mapping[str, Any], key: str, fmt: Formatter) -> Cell:
    """The formatted value of ``metrics[key]``, or a missing cell with the reason."""
    if key not in metrics:
        return missing("not computed")
    reason = (metrics.get("unavailable") or {}).get(key, "not measured")
    return show(metrics[key], fmt, str(reason))


def or_zero(value: Any) -> float:
    return float(value) if is_number(value) else 0.0


def row_label(text: str) -> Cell:
    """A row label; two leading spaces nest it under the row above."""
    stripped = text.lstrip(" ")
    return Cell(stripped, indent=(len(text) - len(stripped)) // 2)


KV_COLUMNS = (Column("Metric"), Column("Value", numeric=True))


Spec = tuple[str, str, Formatter]


def kv_rows(metrics: Mapping[str, Any], specs: Iterable[Spec]) -> list[tuple[Cell, Cell]]:
    return [(row_label(label), value_cell(metrics, key, fmt)) for label, key, fmt in specs]


def kv_table(title: str, rows: Iterable[tuple[Cell, ...]], note: str | None = None) -> TableData:
    return TableData(title, KV_COLUMNS, tuple(rows), note)


def text_of(metrics: Mapping[str, Any], key: str, fmt: Formatter) -> str:
    """A value's text inside a sentence: formatted, or n/a."""
    return show(metrics.get(key), fmt).text


def worker_name(worker: Any) -> str:
    if isinstance(worker, Mapping):
        return str(worker.get("name") or worker.get("address"))
    return str(worker)


def short_file(name: Any) -> str:
    return str(name).rsplit("/", 1)[-1] if name is not None else NA
