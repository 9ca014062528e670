"""Table content as data (report.tables) and its terminal rendering (report.summary)."""

from __future__ import annotations

import io
import math
from typing import Any

import pytest
from measured_run import Measured
from rich.console import Console

from roastcoffea import load_measurement
from roastcoffea.measurement import load_metadata
from roastcoffea.report import tables
from roastcoffea.report.summary import MAX_ROWS, print_summary, summary_tables
from roastcoffea.report.tables import cells
from roastcoffea.report.tables.cells import Cell, Column, TableData
from roastcoffea.report.tables.wall_split import wall_split_table
from roastcoffea.units import byte_unit, format_bytes, format_time


def printed(metrics: dict[str, Any]) -> str:
    out = io.StringIO()
    print_summary(metrics, Console(file=out, width=200))
    return out.getvalue()


def rows_of(table: TableData) -> dict[str, Cell]:
    return {row[0].text: row[1] for row in table.rows}


def test_formatting() -> None:
    assert format_bytes(512) == "512 B"
    assert format_bytes(3 * 1024**3) == "3.00 GiB"
    assert format_bytes(2 * 1024**5) == "2.00 PiB"
    assert format_bytes(1536) == "1.50 kiB" and format_bytes(-2048) == "-2.00 kiB"
    assert format_time(0.01234) == "12.34 ms"
    assert format_time(12.345) == "12.35 s"
    assert format_time(725) == "12m 5s"
    assert format_time(3 * 3600 + 61) == "3hr 1m"
    assert format_time(-2.5) == "-2.50 s"
    assert format_time(0) == "0 s"
    # A byte axis is labelled in the unit format_bytes writes its largest value in.
    for peak in (100, 1000, 5 * 2**20, 3 * 2**40):
        factor, unit = byte_unit(peak)
        assert format_bytes(peak).endswith(unit)
        assert 0.9 <= peak / factor < 1024 * 0.9 or unit == "B"
    assert cells.number(1, " kHz")(1234.56) == "1,234.6 kHz"
    assert cells.fraction(0.1234) == "12.3%" and cells.percent(12.34) == "12.3%"


def test_one_rule_for_units_and_precision() -> None:
    # Counts whole, other numbers to four figures, never in exponent notation.
    sections = {
        "custom": {"z_candidates": {"count": 16, "total": 233662.0, "mean": 14603.875}},
        "memory": {"muons": {"count": 16, "total": 0.0009765625}},
    }
    rows = {row[1].text: row for row in tables.sections_table({"sections": sections}).rows}
    assert [c.text for c in rows["z_candidates"][3:5]] == ["233,662", "14,604"]
    assert rows["muons"][3].text == "1.00 kiB"  # MiB given, written in the unit it calls for
    # Byte rates in binary units per second, as sizes are.
    assert cells.mb_per_second(2.0) == "1.91 MiB/s"
    rate = rows_of(tables.throughput_table({"overall_rate_gbps": 0.1}))["Data Rate"].text
    assert rate == "100.00 Mbps (11.92 MiB/s)"
    # Durations as Dask writes them: no nanoseconds beside microseconds.
    monitoring = rows_of(tables.monitoring_table({"monitoring": {"hook_ns_per_call": 269}}))
    assert monitoring["Hook Time per Call (inside the hook)"].text == "0.27 us"


def test_missing_values_carry_their_reason() -> None:
    metrics = {
        "wall_time": None,
        "total_cpu_time": math.nan,
        "unavailable": {"wall_time": "no clock"},
    }
    assert cells.value_cell(metrics, "wall_time", format_time) == Cell("N/A", reason="no clock")
    assert cells.value_cell(metrics, "total_cpu_time", format_time).reason == (
        "not a finite number"
    )
    assert cells.value_cell(metrics, "absent", str).reason == "not computed"
    assert cells.value_cell({"k": None}, "k", str).reason == "not measured"
    assert cells.value_cell({"k": "text"}, "k", cells.count) == Cell("text")


def test_a_row_must_fill_the_columns() -> None:
    with pytest.raises(ValueError, match="2 cells for 3 columns"):
        TableData("T", (Column("a"), Column("b"), Column("c")), ((Cell("1"), Cell("2")),))


def test_tables_of_the_measured_run(measured: Measured) -> None:
    metrics = measured.metrics
    by_title = {t.title: t for t in tables.build_tables(metrics)}
    timing = rows_of(by_title["Timing Breakdown"])
    assert timing["Wall Time"].text == format_time(metrics["wall_time"])
    assert timing["Number of Chunks"].text == "28"
    fine = rows_of(by_title["Fine Metrics (from Dask Spans)"])
    assert fine["Processor Task Prefixes"].text == "MeasuredProcessor (workers)"
    labels = {row[0].text: row[0] for row in by_title["Fine Metrics (from Dask Spans)"].rows}
    assert labels["CPU %"].indent == 1 and labels["Processor CPU Time"].indent == 0
    assert fine["CPU %"].text == cells.percent(metrics["processor_cpu_percent"])
    datasets = by_title["Chunks per Dataset"]
    assert sum(int(row[3].text) for row in datasets.rows) == metrics["total_events"]
    assert [row[0].text for row in by_title["Fine Metrics per Worker"].rows] == list(
        metrics["per_worker"]
    )
    sections = {(row[0].text, row[1].text) for row in by_title["Sections"].rows}
    assert sections == {("time", "select"), ("memory", "count"), ("bytes", "jets")}
    assert "Failed Chunks" not in by_title  # no chunk failed


def test_metadata_tables(measured: Measured) -> None:
    metadata = load_metadata(measured.path)
    by_title = {t.title: t for t in tables.metadata_tables(metadata)}
    assert list(by_title) == [
        "Measurement",
        "Software Versions",
        "Cluster Shape",
        "Dask Span",
        "Collector Settings",
    ]
    cluster = rows_of(by_title["Cluster Shape"])
    limit = metadata["cluster"]["memory_limit_bytes"]
    # keys read as words, the unit left to the value
    assert cluster["Memory limit"].text == format_bytes(limit)
    assert rows_of(by_title["Collector Settings"])["Processor prefixes"].text == "none"
    versions = rows_of(by_title["Software Versions"])
    assert "roastcoffea" in versions  # package names stay as written
    assert rows_of(by_title["Measurement"])["Elapsed"].text == format_time(
        metadata["t1"] - metadata["t0"]
    )


def test_live_and_loaded_summaries_are_identical(measured: Measured) -> None:
    loaded, _, _ = load_measurement(measured.path)
    assert printed(loaded) == printed(measured.metrics)


def test_terminal_shortens_the_longest_breakdowns_only() -> None:
    row = {"tasks": 1, "erred": 0, "compute_seconds": 1.0}
    metrics = {
        "per_worker": {f"w{i}": row for i in range(100)},
        "per_prefix": {f"p{i}": row for i in range(100)},
    }
    by_title = {t.title: t for t in summary_tables(metrics)}
    assert by_title["Fine Metrics per Worker"].row_count == MAX_ROWS + 1
    assert by_title["Fine Metrics per Task Prefix"].row_count == 100
    text = printed(metrics)
    assert f"... {100 - MAX_ROWS} more" in text and "p99" in text and "w99" not in text


def test_text_is_never_read_as_markup() -> None:
    metrics = {
        "failed_chunks": [
            {"dataset": "[bold]ds[/bold]", "file": "f", "worker": "w", "error": "KeyError: [red]"}
        ]
    }
    text = printed(metrics)
    assert "[bold]ds[/bold]" in text and "KeyError: [red]" in text


def test_a_wall_split_stage_without_its_numbers_reads_not_measured() -> None:
    # What a hostile or truncated metrics.json may hold: the stage's row, its fields gone.
    split = {"startup": {}, "steady": {"seconds": 2.0, "idle_thread_seconds": "x"}, "tail": 3}
    table = wall_split_table({"wall_split": split})
    assert table is not None
    startup, steady = table.rows
    assert [c.text for c in startup[1:]] == [cells.NA, cells.NA, cells.NA]
    assert steady[1].text == format_time(2.0) and steady[2].text == "100.0%"
    assert steady[3].text == "x"
