"""The comparison table of ``roastcoffea compare``: each value in its unit, each delta signed,
N/A where a side is missing, never a bare number in exponent notation."""

from __future__ import annotations

import re

from rich.console import Console

from roastcoffea.report.compare import KEY_METRICS, compare_metrics, comparison_table

BEFORE = {
    "wall_time": 12.5,
    "bytes_read_compressed": 13_880_000,  # 0.01293 GiB
    "event_rate_wall_khz": 431.03,
    "overall_rate_gbps": 0.0089,
    "core_efficiency": 0.625,
    "speedup_factor": 1.6,
    "total_events": 233_662,
    "chunk_duration_mean": 0.269,
}
AFTER = {**BEFORE, "wall_time": 10.0, "chunk_duration_mean": 0.2684034, "core_efficiency": 0.5}


def rendered(*runs: dict) -> dict[str, list[str]]:
    console = Console(width=200, record=True, color_system=None)
    console.print(comparison_table([f"run{i}" for i in range(len(runs))], compare_metrics(runs)))
    rows = {}
    for line in console.export_text().splitlines():
        cells = [c.strip() for c in re.split(r"[│┃]", line) if c.strip()]
        if cells:
            rows[cells[0]] = cells[1:]
    return rows


def test_values_and_deltas_are_written_in_their_units() -> None:
    rows = rendered(BEFORE, AFTER)
    assert rows["wall time"] == ["12.50 s", "10.00 s", "-2.50 s", "0.800x"]
    assert rows["bytes read"][:3] == ["13.24 MiB", "13.24 MiB", "+0 B"]
    assert rows["event rate (wall)"][0] == "431.03 kHz"
    assert rows["data rate"][0] == "8.90 Mbps"
    assert rows["core efficiency"][:3] == ["62.5%", "50.0%", "-12.5%"]
    assert rows["speedup"][0] == "1.60x"
    assert rows["events"][0] == "233,662"
    assert rows["mean chunk duration"][2] == "-596.60 us"  # not "Δ -0.0005966"


def test_a_missing_side_gives_no_delta() -> None:
    rows = rendered(BEFORE, {**AFTER, "wall_time": None})
    assert rows["wall time"] == ["12.50 s", "N/A", "N/A", "N/A"]
    assert rows["processor CPU"] == ["N/A", "N/A", "N/A", "N/A"]


def test_no_cell_is_in_exponent_notation() -> None:
    tiny = {q.key: 1.234e-7 for q in KEY_METRICS}
    huge = {q.key: 9.87e14 for q in KEY_METRICS}
    for cells in rendered(tiny, huge).values():
        assert not any(re.search(r"\de[+-]?\d", c) for c in cells), cells
