"""What the measurement says of itself: monitoring's cost and losses, the metrics not measured."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roastcoffea.report.tables.cells import (
    Cell,
    Column,
    Formatter,
    TableData,
    count,
    is_number,
    kv_table,
    nanoseconds,
    number,
    show,
    text_of,
    value_cell,
)
from roastcoffea.units import format_bytes, format_time

#: Monitoring counters: (label, key, formatter, positive values are bad news).
_MONITORING_ROWS: tuple[tuple[str, str, Formatter, bool], ...] = (
    ("Transition Events", "events", count, False),
    ("Dropped Events", "dropped_events", count, True),
    ("Hook Calls", "hook_calls", count, False),
    ("Hook Errors", "hook_errors", count, True),
    ("Hook Time per Call (inside the hook)", "hook_ns_per_call", nanoseconds, False),
    ("Worker Payloads", "payloads", count, False),
    ("Payload Bytes", "payload_bytes", format_bytes, False),
    ("Payload Errors", "payload_errors", count, True),
    ("Payload Gaps", "payload_gaps", count, False),
    ("Records", "records", count, False),
    ("Records Dropped", "records_dropped", count, True),
    ("Records Taken During the Run", "records_streamed", count, False),
    ("Rows Refused", "rows_refused", count, True),
    ("Prefixes Folded", "prefixes_folded", count, True),
    ("Series Memory", "series_bytes", format_bytes, False),
    ("Flush Time", "flush_seconds", format_time, False),
    ("Collector Exit Time", "exit_seconds", format_time, False),
    ("Snapshot Size", "snapshot_bytes", format_bytes, False),
)


def monitoring_table(metrics: Mapping[str, Any]) -> TableData:
    """What monitoring cost and whether it lost anything."""
    title = "Monitoring Overhead"
    monitoring = metrics.get("monitoring")
    if not isinstance(monitoring, Mapping):
        return kv_table(title, [(Cell("Monitoring"), value_cell(metrics, "monitoring", str))])
    rows = []
    for label, key, fmt, bad_if_positive in _MONITORING_ROWS:
        value = monitoring.get(key)
        cell = show(value, fmt, "not measured" if key in monitoring else "not reported")
        if bad_if_positive and is_number(value) and value > 0:
            cell = Cell(cell.text, alert=True)
        rows.append((Cell(label), cell))
    errors = monitoring.get("errors")
    if isinstance(errors, Mapping) and errors:
        shown = ", ".join(f"{k}: {v}" for k, v in sorted(errors.items()))
        rows.append((Cell("Caught Errors"), Cell(shown, alert=True)))
    lost = monitoring.get("records_lost")
    if isinstance(lost, Mapping) and lost:
        shown = ", ".join(f"{k} ({v})" for k, v in sorted(lost.items()))
        rows.append((Cell("Records Lost on Workers"), Cell(shown, alert=True)))
    rows += [
        (Cell("Collector Error"), Cell(str(m), alert=True))
        for m in monitoring.get("collector_errors") or ()
    ]
    rows += [(Cell("Note"), Cell(str(note))) for note in monitoring.get("notes") or ()]
    if is_number(metrics.get("phase_clock_seconds")):
        rows.append((Cell("Phase Clock (estimated)"), _phase_clock_cell(metrics)))
    if is_number(metrics.get("instrument_seconds_per_chunk")):
        rows.append((Cell("Chunk Instrumentation (measured)"), _instrument_cell(metrics)))
    if is_number(metrics.get("monitoring_seconds_per_chunk")):
        rows.append((Cell("Cost per Chunk"), _per_chunk_cell(metrics)))
    return kv_table(title, rows)


def _instrument_cell(metrics: Mapping[str, Any]) -> Cell:
    per_chunk = text_of(metrics, "instrument_seconds_per_chunk", format_time)
    total = text_of(metrics, "instrument_seconds", format_time)
    return Cell(f"{per_chunk} per chunk ({total} in all)")


def _per_chunk_cell(metrics: Mapping[str, Any]) -> Cell:
    share = metrics.get("monitoring_percent")
    of_tasks = f"{share:.2f}% of the chunks' task time; " if is_number(share) else ""
    parts = "instrumentation + phase clock" if metrics.get("phase_tasks") else "instrumentation"
    return Cell(
        f"{text_of(metrics, 'monitoring_seconds_per_chunk', format_time)} "
        f"({of_tasks}{parts}, their own code: a lower bound)"
    )


def _phase_clock_cell(metrics: Mapping[str, Any]) -> Cell:
    seconds = text_of(metrics, "phase_clock_seconds", format_time)
    share = text_of(metrics, "phase_clock_percent", number(2, "%"))
    switches = text_of(metrics, "phase_clock_switches", count)
    return Cell(f"{seconds} ({share} of processor time, {switches} hooked calls)")


def unavailable_table(metrics: Mapping[str, Any]) -> TableData | None:
    """Every metric that could not be measured and why; None when all were."""
    unavailable = metrics.get("unavailable")
    if not isinstance(unavailable, Mapping) or not unavailable:
        return None
    rows = tuple((Cell(str(k)), Cell(str(v))) for k, v in sorted(unavailable.items()))
    columns = (Column("Metric"), Column("Why it is not available"))
    return TableData("Metrics Not Measured", columns, rows)
