"""Workflow totals and rates, the custom_metrics merge, and the None-with-reason contract."""

from __future__ import annotations

import math

import pytest
from test_metrics_support import (
    T0,
    W1,
    chunk,
    close,
    make_inputs,
    make_series,
    make_snapshot,
    metrics_of,
    point,
    processor_metrics,
    span_digests,
)

from roastcoffea.compat_0_1_2.names import METRIC_ALIASES
from roastcoffea.report.notebook import MetricsDict

REPORT = {
    "entries": 2_000_000,
    "bytesread": 500_000_000,
    "processtime": 7.0,
    "chunks": 4,
    "columns": ["Jet_pt"],
}

#: Processor task time 5 + 2 + 0.25 + 0.75 = 8 s; thread-cpu 5 (processor) + 2 (reduce) = 7 s.
DIGESTS = span_digests(
    {
        (W1, "MyProc", "thread-cpu", "seconds"): 5.0,
        (W1, "MyProc", "thread-noncpu", "seconds"): 2.0,
        (W1, "MyProc", "other", "seconds"): 0.25,
        (W1, "MyProc", "executor", "seconds"): 0.75,
        (W1, "reduce", "thread-cpu", "seconds"): 2.0,
    }
)


def workflow(**overrides):
    snapshot = make_snapshot(digests=DIGESTS)
    return processor_metrics(snapshot, **{"coffea_report": REPORT, **overrides})


def test_totals_and_rates_from_the_report() -> None:
    m = workflow()
    assert m["wall_time"] == 10.0
    assert m["total_events"] == 2_000_000
    assert m["bytes_read_compressed"] == 500_000_000
    assert m["total_process_time"] == 7.0
    assert m["total_cpu_time"] == 7.0
    assert m["num_chunks"] == 4
    assert m["avg_cpu_time_per_chunk"] == 5.0 / 4
    assert close(m["overall_rate_gbps"], 500_000_000 * 8 / 1e9 / 10.0)
    assert close(m["overall_rate_mb_s"], 500_000_000 / 1e6 / 10.0)
    assert close(m["event_rate_wall_khz"], 2_000_000 / 10.0 / 1e3)
    assert close(m["event_rate_agg_khz"], 2_000_000 / 8.0 / 1e3)
    assert m["totals_source"] == dict.fromkeys(
        ("total_events", "bytes_read_compressed", "total_process_time"), "coffea_report"
    )
    for key in ("custom_metrics", "dataset_totals"):
        assert m[key] is None
        assert "no custom_metrics" in m["unavailable"][key]


def test_aliases_of_0_1_2() -> None:
    m = MetricsDict(workflow())
    assert not set(METRIC_ALIASES) & set(m)  # looked up, never stored
    assert m["elapsed_time_seconds"] == m["wall_time"]
    assert m["total_bytes_read"] == m["bytes_read_compressed"]
    assert m["data_rate_gbps"] == m["overall_rate_gbps"]
    assert m["event_rate_elapsed_khz"] == m["event_rate_wall_khz"]
    assert m["event_rate_cpu_total_khz"] == m["event_rate_agg_khz"]


def test_num_chunks_prefers_chunk_records() -> None:
    m = workflow(chunks=[chunk(entry_start=i) for i in range(5)])
    assert m["num_chunks"] == 5
    assert m["avg_cpu_time_per_chunk"] == 1.0
    m = workflow(coffea_report={**REPORT, "chunks": 0})
    assert m["avg_cpu_time_per_chunk"] is None
    assert m["unavailable"]["avg_cpu_time_per_chunk"] == "num_chunks is 0"
    m = workflow(coffea_report=None)
    assert m["num_chunks"] is None
    assert "no chunk record" in m["unavailable"]["num_chunks"]


def test_custom_metrics_alone_are_summed_and_gaps_fall_back_to_the_report() -> None:
    custom = {
        "dy": {
            "entries": 100,
            "duration": 1.0,
            "performance_counters": {"num_requested_bytes": 1000},
        },
        "tt": {"entries": 50, "performance_counters": {"num_requested_bytes": 500}},
    }
    m = workflow(custom_metrics=custom)
    assert m["total_events"] == 150
    assert m["bytes_read_compressed"] == 1500
    assert m["total_process_time"] == 7.0  # "tt" has no duration: the report's
    assert m["totals_source"] == {
        "total_events": "dataset_totals",
        "bytes_read_compressed": "dataset_totals",
        "total_process_time": "coffea_report",
    }
    assert m["custom_metrics"] == custom
    assert m["dataset_totals"]["tt"] == {
        "entries": 50,
        "bytesread": 500,
        "source": "custom_metrics",
    }
    assert close(m["event_rate_wall_khz"], 150 / 10.0 / 1e3)


def test_custom_metrics_override_only_the_datasets_they_name() -> None:
    chunks = [
        chunk(dataset="dy", entry_start=0, num_events=1000, bytes_read_task=8000, duration=2.0),
        chunk(dataset="dy", entry_start=1, num_events=1000, bytes_read_task=8000, duration=2.0),
        chunk(dataset="tt", entry_start=0, num_events=500, bytes_read_task=3000, duration=2.0),
        chunk(dataset="tt", entry_start=1, num_events=7, error="OSError: boom"),  # not counted
    ]
    custom = {"tt": {"entries": 600, "performance_counters": {"num_requested_bytes": 9999}}}
    m = workflow(custom_metrics=custom, chunks=chunks)
    assert m["total_events"] == 2000 + 600
    assert m["bytes_read_compressed"] == 16000 + 9999
    assert m["total_process_time"] == 4.0 + 2.0  # tt's duration from its chunk
    assert m["dataset_totals"]["dy"] == {
        "entries": 2000,
        "processtime": 4.0,
        "bytesread": 16000,
        "source": "chunks",
    }
    assert m["dataset_totals"]["tt"] == {
        "entries": 600,
        "processtime": 2.0,
        "bytesread": 9999,
        "source": "custom_metrics+chunks",
    }
    assert set(m["totals_source"].values()) == {"dataset_totals"}


def test_missing_report() -> None:
    m = workflow(coffea_report=None)
    for key in ("total_events", "bytes_read_compressed", "total_process_time"):
        assert m[key] is None
        assert m["unavailable"][key] == "no coffea report set"
    assert m["unavailable"]["overall_rate_gbps"] == (
        "needs bytes_read_compressed: no coffea report set"
    )
    m = workflow(coffea_report={"entries": 10})
    assert m["total_events"] == 10
    assert m["unavailable"]["bytes_read_compressed"] == "the coffea report has no 'bytesread'"


def test_agg_rate_needs_processor_task_time() -> None:
    digests = span_digests({(W1, "reduce", "thread-cpu", "seconds"): 1.0})
    m = workflow(snapshot=make_snapshot(digests=digests))
    assert m["event_rate_agg_khz"] is None
    assert m["unavailable"]["event_rate_agg_khz"] == "processor_task_time_seconds is 0"


@pytest.mark.parametrize("wall_time", [-1.0, math.nan, math.inf])
def test_wall_time_must_be_a_duration(wall_time: float) -> None:
    with pytest.raises(ValueError, match="wall_time"):
        make_inputs(wall_time=wall_time)


def test_zero_wall_time_leaves_the_rates_unavailable() -> None:
    m = workflow(wall_time=0.0)
    assert m["wall_time"] is None
    for key in ("overall_rate_gbps", "event_rate_wall_khz", "speedup_factor"):
        assert m[key] is None
        assert m["unavailable"][key].startswith("needs wall_time: the collector's wall time is 0")
    assert m["total_events"] == 2_000_000


def test_window_must_not_end_before_it_starts() -> None:
    with pytest.raises(ValueError, match="before it starts"):
        make_inputs(t_start=T0, t_end=T0 - 1)


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"snapshot": make_snapshot(digests=DIGESTS), "coffea_report": REPORT},
        {
            "snapshot": make_snapshot(
                digests=DIGESTS, series={W1: make_series([point(T0 + i) for i in range(4)])}
            ),
            "coffea_report": REPORT,
            "detected_prefixes": {"MyProc"},
            "chunks": [chunk(), chunk(error="KeyError: 'x'", accessed_bytes=None)],
            "custom_metrics": {"dy": {"entries": 3}},
        },
        {"track_workers": False, "chunks": [chunk()]},
    ],
)
def test_every_none_has_a_reason(overrides: dict) -> None:
    m = metrics_of(**overrides)
    unavailable = m.pop("unavailable")
    assert {key for key, value in m.items() if value is None} == set(unavailable)
    assert all(isinstance(reason, str) and reason for reason in unavailable.values())


def test_a_recomputed_chunk_counts_once_in_the_totals() -> None:
    # The first execution's result was lost with its worker; Dask ran the item again.
    first = chunk(dataset="dy", num_events=1000, bytes_read_task=8000, duration=2.0)
    again = chunk(dataset="dy", num_events=1000, bytes_read_task=8000, duration=3.0)
    custom = {"tt": {"entries": 600, "performance_counters": {"num_requested_bytes": 9999}}}
    m = workflow(custom_metrics=custom, chunks=[first, again])
    assert m["num_chunks"] == 1
    assert m["total_events"] == 1000 + 600
    assert m["bytes_read_compressed"] == 8000 + 9999
    assert m["dataset_totals"]["dy"]["processtime"] == 3.0  # the execution Dask kept
