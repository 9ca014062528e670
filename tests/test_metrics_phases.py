"""Phase metrics and the diagnosis: formulas on known digests and records."""

from __future__ import annotations

from typing import Any

import pytest
from test_metrics_support import (
    W1,
    W2,
    chunk,
    make_snapshot,
    metrics_of,
    processor_metrics,
    span_digests,
)

from roastcoffea.report.tables import (
    codecs_table,
    diagnosis_table,
    monitoring_table,
    phases_table,
)


def phase_digests(worker: str, wall: dict[str, float], **extra: float) -> dict[tuple, float]:
    """The digests one worker's measured tasks leave: wall = cpu / 2 for every phase."""
    rows: dict[tuple, float] = {}
    for phase, seconds in wall.items():
        rows[(worker, "MyProc", f"phase:{phase}", "wall-seconds")] = seconds
        rows[(worker, "MyProc", f"phase:{phase}", "cpu-seconds")] = seconds / 2
    rows[(worker, "MyProc", "phase-tasks", "count")] = extra.get("tasks", 1)
    rows[(worker, "MyProc", "phase-outputs", "count")] = extra.get("outputs", 1)
    rows[(worker, "MyProc", "phase:read", "bytes")] = extra.get("read_bytes", 0)
    rows[(worker, "MyProc", "phase-clock", "count")] = 100
    rows[(worker, "MyProc", "phase-clock", "wall-seconds")] = 0.001
    rows[(worker, "MyProc", "phase-clock", "cpu-seconds")] = 0.25
    return span_digests(rows)


WALL = {
    "open": 1,
    "read": 2,
    "decompress": 3,
    "interpret": 1,
    "user": 2,
    "output": 0.5,
    "other": 0.5,
}

CODEC_ROWS = span_digests(
    {
        (W1, "MyProc", "decompress:LZMA", "wall-seconds"): 3.0,
        (W1, "MyProc", "decompress:LZMA", "cpu-seconds"): 2.5,
        (W1, "MyProc", "decompress:LZMA", "bytes"): 6e6,
        (W1, "MyProc", "decompress:LZMA", "compressed-bytes"): 1e6,
        (W1, "MyProc", "phase:decompress", "bytes"): 6e6,
    }
)


def records() -> list[dict[str, Any]]:
    def record(dataset: str, start: int, wall: dict[str, float]) -> dict[str, Any]:
        return {
            "kind": "phases",
            "dataset": dataset,
            "entry_start": start,
            "entry_stop": start + 1000,
            "wall": wall,
            "t_start": 100.0 + start,
            "elapsed": sum(wall.values()),
        }

    return [
        record("dy", 0, {"interpret": 1.0, "user": 3.0}),
        record("dy", 1000, {"interpret": 3.0, "user": 1.0}),
        record("tt", 0, {"interpret": 0.0, "user": 2.0}),
    ]


def measured(**overrides: Any) -> dict[str, Any]:
    digests = {**phase_digests(W1, WALL, read_bytes=4_000_000), **CODEC_ROWS}
    digests.update(phase_digests(W2, {p: 0.0 for p in WALL}, tasks=0, outputs=0))
    return processor_metrics(make_snapshot(digests=digests), phases=records(), **overrides)


def test_totals_shares_and_rates() -> None:
    m = measured()
    assert m["phase_tasks"] == 1
    assert m["phase_wall_seconds"] == {p: float(s) for p, s in WALL.items()}
    assert m["phase_cpu_seconds"]["decompress"] == 1.5
    assert m["phase_cpu_split_bound_seconds"] == 0.5  # both workers' bounds
    assert m["phase_share_percent"]["decompress"] == pytest.approx(30.0)
    assert sum(m["phase_share_percent"].values()) == pytest.approx(100.0)
    assert m["read_bandwidth_mb_s"] == pytest.approx(2.0)  # 4 MB in 2 s of read wait
    assert m["decompress_throughput_mb_s"] == pytest.approx(2.0)  # 6 MB out in 3 s
    lzma = m["decompress_codecs"]["LZMA"]
    assert lzma["throughput_mb_s"] == pytest.approx(2.0) and lzma["compressed_bytes"] == 1e6
    assert m["io_wait_percent"] == pytest.approx(20.0)
    assert m["io_cpu_percent"] == pytest.approx(40.0)
    assert m["io_phase_percent"] == pytest.approx(70.0)
    assert m["output_phase_seconds"] == 0.5
    assert m["phase_per_worker"][W1]["user"] == 2.0
    assert m["phase_clock_switches"] == 200 and m["phase_clock_seconds"] == 0.002
    assert m["phase_clock_percent"] == pytest.approx(0.02)


def test_the_monitoring_cost_counts_every_execution() -> None:
    failed = chunk(error="OSError: xrootd", instrument_seconds=0.001, task_duration=1.0)
    kept = chunk(instrument_seconds=0.003, instrument_cpu_seconds=0.002, task_duration=2.0)
    m = measured(chunks=[failed, kept])  # the phase clock cost 0.002 s
    assert (m["instrument_seconds"], m["instrument_cpu_seconds"]) == (0.004, 0.0035)
    assert m["instrument_seconds_per_chunk"] == 0.002
    assert m["monitoring_seconds_per_chunk"] == pytest.approx((0.004 + 0.002) / 2)
    assert m["monitoring_percent"] == pytest.approx(100 * 0.006 / 3.0)


def test_records_give_the_per_chunk_and_per_dataset_views() -> None:
    m = measured()
    assert m["phase_per_dataset"] == {
        "dy": {"interpret": 4.0, "user": 4.0},
        "tt": {"interpret": 0.0, "user": 2.0},
    }
    assert m["phase_chunk_seconds"]["user"] == {"mean": 2.0, "median": 2.0, "max": 3.0}
    assert m["interpret_rate_hz"] == pytest.approx(3000 / 4.0)
    assert len(m["raw_phase_records"]) == 3


def test_without_output_measurements_the_output_phase_is_missing() -> None:
    digests = phase_digests(W1, {p: s for p, s in WALL.items() if p != "output"}, outputs=0)
    m = processor_metrics(make_snapshot(digests=digests))
    assert "output" not in m["phase_wall_seconds"]
    assert m["output_phase_seconds"] is None
    assert "compression is off" in m["unavailable"]["output_phase_seconds"]
    assert (
        m["raw_phase_records"] is None
        and "no phase record" in m["unavailable"]["raw_phase_records"]
    )


def test_time_off_cpu_and_the_data_input_share_are_two_quantities_under_two_keys() -> None:
    thread_time = {
        (W1, "MyProc", "thread-cpu", "seconds"): 3.0,
        (W1, "MyProc", "thread-noncpu", "seconds"): 1.0,
    }
    digests = {**span_digests(thread_time), **phase_digests(W1, WALL)}
    m = processor_metrics(make_snapshot(digests=digests))
    assert m["io_overhead_percent"] == pytest.approx(25.0)  # off CPU, with or without phases
    assert m["io_phase_percent"] == pytest.approx(70.0)  # open + read + decompress + interpret


def test_without_phases_everything_says_why_and_io_overhead_keeps_its_old_formula() -> None:
    digests = span_digests(
        {
            (W1, "MyProc", "thread-cpu", "seconds"): 3.0,
            (W1, "MyProc", "thread-noncpu", "seconds"): 1.0,
        }
    )
    m = processor_metrics(make_snapshot(digests=digests))
    assert (
        m["phase_wall_seconds"] is None and "phase clock" in m["unavailable"]["phase_wall_seconds"]
    )
    assert m["diagnosis"] is None and "phase" in m["unavailable"]["diagnosis"]
    assert m["io_overhead_percent"] == pytest.approx(25.0)
    assert m["io_phase_percent"] is None and "phase clock" in m["unavailable"]["io_phase_percent"]
    assert phases_table(m) is None and diagnosis_table(m) is None and codecs_table(m) is None


def test_diagnosis_names_the_dominant_side_and_every_rule_over_its_threshold() -> None:
    findings = measured()["diagnosis"]
    rules = [f["rule"] for f in findings]
    # decompress 30 % >= 25, read 20 % >= 20; user 20 % < 50, open 10 % < 20; by stake.
    assert rules == ["decompression", "storage"]
    stakes = [f["wall_at_stake_seconds"] for f in findings]
    assert stakes[0] == pytest.approx(1.5 * stakes[1])
    assert "getting the data in dominates" in measured()["diagnosis_summary"]
    assert "LZMA" in findings[0]["message"] and "LZ4 or ZSTD" in findings[0]["message"]
    assert "1.91 MiB/s" in findings[1]["message"]  # 2 MB/s


def test_user_code_dominates_the_busy_run() -> None:
    wall = {
        "open": 0.1,
        "read": 0,
        "decompress": 0.1,
        "interpret": 0.3,
        "user": 9,
        "output": 0.1,
        "other": 0.4,
    }
    m = processor_metrics(make_snapshot(digests=phase_digests(W1, wall)))
    assert [f["rule"] for f in m["diagnosis"]] == ["user-code"]
    assert "the user's code dominates" in m["diagnosis_summary"]


def test_tables_show_the_phases_codecs_and_findings() -> None:
    m = measured()
    table = phases_table(m)
    assert [row[0].text for row in table.rows][:7] == list(WALL)
    assert table.note.endswith(
        "Each phase's CPU is exact to within 500.00 ms (CPU split by wall;"
        " the setting roastcoffea.phase-cpu-interval = 0 makes it exact)."
    )
    assert codecs_table(m).rows[0][0].text == "LZMA"
    assert len(diagnosis_table(m).rows) == 2
    assert diagnosis_table(m).note.startswith(m["diagnosis_summary"])
    clock = [
        row[1].text for row in monitoring_table(m).rows if row[0].text.startswith("Phase Clock")
    ]
    assert clock == ["2.00 ms (0.02% of processor time, 200 hooked calls)"]


def test_the_monitoring_table_shows_the_cost_per_chunk() -> None:
    m = measured(chunks=[chunk(instrument_seconds=0.003, task_duration=2.0)])
    rows = {row[0].text: row[1].text for row in monitoring_table(m).rows}
    assert rows["Chunk Instrumentation (measured)"] == "3.00 ms per chunk (3.00 ms in all)"
    assert rows["Cost per Chunk"] == (
        "5.00 ms (0.25% of the chunks' task time; instrumentation + phase clock, their own code: "
        "a lower bound)"
    )


def test_without_the_phase_clock_the_cost_per_chunk_names_the_instrumentation_alone() -> None:
    m = metrics_of(chunks=[chunk(instrument_seconds=0.003, task_duration=2.0)])
    rows = {row[0].text: row[1].text for row in monitoring_table(m).rows}
    assert "Phase Clock (estimated)" not in rows
    assert rows["Cost per Chunk"] == (
        "3.00 ms (0.15% of the chunks' task time; instrumentation, their own code: a lower bound)"
    )
