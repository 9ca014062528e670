"""Key metrics of several measurements side by side, with deltas and ratios.

The first measurement is the baseline: every other one gets, per metric, its
difference from the baseline and its ratio to it. A value that is missing or
None on either side gives no delta and no ratio (shown as N/A), never 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.table import Table
from rich.text import Text

from roastcoffea.metrics.regression import MIN_SHARE_PERCENT, Comparison
from roastcoffea.report.summary import safe_text
from roastcoffea.units import (
    format_bytes,
    format_gbps,
    format_number,
    format_percent,
    format_rate,
    format_time,
)


def _khz(value: float) -> str:
    return format_rate(value * 1e3)


def _times(value: float) -> str:
    return f"{value:.2f}x"


@dataclass(frozen=True)
class Quantity:
    """A compared metric: its key, label, the scale to the unit it is written in, and how
    it is written, unit included (docs/metrics.md, "How numbers are written")."""

    key: str
    label: str
    scale: float = 1.0
    write: Callable[[float], str] = format_number


#: The compared metrics, in display order.
KEY_METRICS = (
    # the run
    Quantity("wall_time", "wall time", write=format_time),
    Quantity("total_events", "events"),
    Quantity("num_chunks", "chunks"),
    # rates
    Quantity("event_rate_wall_khz", "event rate (wall)", write=_khz),
    Quantity("event_rate_agg_khz", "event rate per processor-second", write=_khz),
    Quantity("event_rate_core_khz", "event rate per core", write=_khz),
    Quantity("overall_rate_gbps", "data rate", write=format_gbps),
    Quantity("bytes_read_compressed", "bytes read", write=format_bytes),
    # efficiency
    Quantity("total_cpu_time", "CPU time", write=format_time),
    Quantity("core_efficiency", "core efficiency", 100.0, format_percent),
    Quantity("speedup_factor", "speedup", write=_times),
    Quantity("io_overhead_percent", "processor time off CPU", write=format_percent),
    Quantity("io_phase_percent", "data input share of processor phases", write=format_percent),
    # processor vs overhead
    Quantity("processor_cpu_time_seconds", "processor CPU", write=format_time),
    Quantity("processor_noncpu_time_seconds", "processor non-CPU", write=format_time),
    Quantity("overhead_cpu_time_seconds", "overhead CPU", write=format_time),
    Quantity("overhead_noncpu_time_seconds", "overhead non-CPU", write=format_time),
    # resources
    Quantity("avg_workers", "workers (time average)"),
    Quantity("total_cores", "cores (time average)"),
    Quantity("peak_memory_bytes", "peak cluster memory", write=format_bytes),
    Quantity("chunk_duration_mean", "mean chunk duration", write=format_time),
)


@dataclass(frozen=True)
class ComparedRow:
    """One metric across the measurements (display units).

    ``deltas[i]`` and ``ratios[i]`` compare measurement ``i + 1`` with the
    baseline; None when either value is missing or the ratio's baseline is 0.
    """

    quantity: Quantity
    values: tuple[float | None, ...]
    deltas: tuple[float | None, ...]
    ratios: tuple[float | None, ...]


def _value(metrics: Mapping[str, Any], quantity: Quantity) -> float | None:
    value = metrics.get(quantity.key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value) * quantity.scale
    return value if math.isfinite(value) else None


def compare_metrics(measurements: Sequence[Mapping[str, Any]]) -> list[ComparedRow]:
    """Compare the key metrics of ``measurements`` with the first one.

    Parameters
    ----------
    measurements : sequence of dict
        Metrics dictionaries (as ``load_measurement`` returns), at least two.

    Returns
    -------
    list of ComparedRow
        One row per entry of :data:`KEY_METRICS`.
    """
    if len(measurements) < 2:
        raise ValueError(f"need at least two measurements to compare, got {len(measurements)}")
    rows = []
    for quantity in KEY_METRICS:
        values = tuple(_value(metrics, quantity) for metrics in measurements)
        base = values[0]
        deltas = tuple(None if base is None or v is None else v - base for v in values[1:])
        ratios = tuple(
            None if base is None or v is None or base == 0 else v / base for v in values[1:]
        )
        rows.append(ComparedRow(quantity, values, deltas, ratios))
    return rows


def _written(quantity: Quantity, value: float | None, signed: bool = False) -> str:
    """``value`` as the quantity writes it; a delta with its sign (``+1.20 s``, ``-3.5%``)."""
    if value is None:
        return "[dim]N/A[/dim]"
    if not signed:
        return quantity.write(value)
    return ("+" if value >= 0 else "-") + quantity.write(abs(value))


def _ratio(value: float | None) -> str:
    return "[dim]N/A[/dim]" if value is None else f"{value:.3f}x"


def comparison_table(names: Sequence[str], rows: Sequence[ComparedRow]) -> Table:
    """A rich table: metric, then each value with its delta and ratio, in their units."""
    table = Table(title="Measurement Comparison", header_style="bold cyan")
    table.add_column("Metric", style="cyan", no_wrap=True)
    table.add_column(safe_text(f"{names[0]} (baseline)"), justify="right", style="magenta")
    for name in names[1:]:
        table.add_column(safe_text(name), justify="right", style="magenta")
        table.add_column("Δ", justify="right")
        table.add_column("ratio", justify="right")
    for row in rows:
        quantity = row.quantity
        cells: list[str | Text] = [safe_text(quantity.label), _written(quantity, row.values[0])]
        for value, delta, ratio in zip(row.values[1:], row.deltas, row.ratios, strict=True):
            cells += [_written(quantity, value), _written(quantity, delta, True), _ratio(ratio)]
        table.add_row(*cells)
    return table


def cost_change_table(before: str, after: str, comparison: Comparison) -> Table:
    """A rich table of the change of cost per event, marked rows in bold with their side.

    The caption says how the noise was measured (the runs' spread, or one run per side
    and its floor) and at which level the intervals are.
    """
    level = 1.0 - comparison.alpha / comparison.tested
    table = Table(
        title=safe_text(f"CPU Cost per Event: {after} vs {before}"),
        caption=f"the median chunk's CPU per event; {comparison.note}; {comparison.tested} "
        f"changes tested, family-wise false-alarm level {comparison.alpha:g} (Holm); marked: "
        f"beyond the noise and the phase at least {MIN_SHARE_PERCENT:g}% of its dataset's cost",
        header_style="bold cyan",
    )
    for name in ("Dataset", "Phase"):
        table.add_column(name, style="cyan", no_wrap=True)
    table.add_column(safe_text(f"{before} (µs/event)"), justify="right")
    table.add_column(safe_text(f"{after} (µs/event)"), justify="right")
    table.add_column("change", justify="right")
    table.add_column(f"{level:.1%} interval", justify="right")
    table.add_column("")
    for c in comparison.changes:
        style = "bold red" if c.regression else "bold green" if c.marked else "dim"
        table.add_row(
            safe_text(c.dataset),
            c.phase,
            format_number(c.before_us),
            format_number(c.after_us),
            f"{c.change_percent:+.1f}%",
            f"[{c.low:+.1f}%, {c.high:+.1f}%]",
            Text(c.note.upper() if c.marked else c.note, style=style),
        )
    return table
