"""Key metrics of several measurements side by side, with deltas and ratios.

The first measurement is the baseline: every other one gets, per metric, its
difference from the baseline and its ratio to it. A value that is missing or
None on either side gives no delta and no ratio (shown as N/A), never 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.table import Table
from rich.text import Text

from roastcoffea.metrics.regression import MIN_SHARE_PERCENT, Comparison
from roastcoffea.report.summary import safe_text
from roastcoffea.units import format_number


@dataclass(frozen=True)
class Quantity:
    """A compared metric: its key, label, display unit and the scale to it."""

    key: str
    label: str
    unit: str
    scale: float = 1.0


#: The compared metrics, in display order.
KEY_METRICS = (
    # the run
    Quantity("wall_time", "wall time", "s"),
    Quantity("total_events", "events", "events"),
    Quantity("num_chunks", "chunks", "chunks"),
    # rates
    Quantity("event_rate_wall_khz", "event rate (wall)", "kHz"),
    Quantity("event_rate_agg_khz", "event rate per processor-second", "kHz"),
    Quantity("event_rate_core_khz", "event rate per core", "kHz"),
    Quantity("overall_rate_gbps", "data rate", "Gbps"),
    Quantity("bytes_read_compressed", "bytes read", "GiB", 2**-30),
    # efficiency
    Quantity("total_cpu_time", "CPU time", "s"),
    Quantity("core_efficiency", "core efficiency", "%", 100.0),
    Quantity("speedup_factor", "speedup", "x"),
    Quantity("io_overhead_pct", "processor time off CPU", "%"),
    Quantity("io_phase_pct", "data input share of processor phases", "%"),
    # processor vs overhead
    Quantity("processor_cpu_time_seconds", "processor CPU", "s"),
    Quantity("processor_noncpu_time_seconds", "processor non-CPU", "s"),
    Quantity("overhead_cpu_time_seconds", "overhead CPU", "s"),
    Quantity("overhead_noncpu_time_seconds", "overhead non-CPU", "s"),
    # resources
    Quantity("avg_workers", "workers (time average)", "workers"),
    Quantity("total_cores", "cores (time average)", "threads"),
    Quantity("peak_memory_bytes", "peak cluster memory", "GiB", 2**-30),
    Quantity("chunk_duration_mean", "mean chunk duration", "s"),
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


def _number(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "[dim]N/A[/dim]"
    text = format_number(value)
    return f"+{text}" if signed and value >= 0 else text


def _ratio(value: float | None) -> str:
    return "[dim]N/A[/dim]" if value is None else f"{value:.3f}x"


def comparison_table(names: Sequence[str], rows: Sequence[ComparedRow]) -> Table:
    """A rich table: metric, unit, then each value with its delta and ratio."""
    table = Table(title="Measurement Comparison", header_style="bold cyan")
    table.add_column("Metric", style="cyan", no_wrap=True)
    table.add_column("Unit")
    table.add_column(safe_text(f"{names[0]} (baseline)"), justify="right", style="magenta")
    for name in names[1:]:
        table.add_column(safe_text(name), justify="right", style="magenta")
        table.add_column("Δ", justify="right")
        table.add_column("ratio", justify="right")
    for row in rows:
        cells: list[str | Text] = [safe_text(row.quantity.label), row.quantity.unit]
        cells.append(_number(row.values[0]))
        for value, delta, ratio in zip(row.values[1:], row.deltas, row.ratios, strict=True):
            cells += [_number(value), _number(delta, signed=True), _ratio(ratio)]
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
