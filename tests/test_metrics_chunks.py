"""Chunk statistics: counts, distributions, per dataset, chunk_info and sections."""

from __future__ import annotations

import math

import pytest
from test_metrics_support import T0, chunk, close, metrics_of

from roastcoffea.metrics.chunks import DISTRIBUTIONS

CHUNKS = [
    chunk(
        dataset="dy",
        duration=2.0,
        task_duration=3.0,
        process_cpu_seconds=1.5,
        mem_delta_mib=10.0,
        num_events=1000,
        file="/data/a.root",
        entry_start=0,
        entry_stop=1000,
        t_start=T0 + 1,
        t_end=T0 + 3,
        bytes_read=5000,
        timing={"load": 0.5, "select": 0.25},
        memory={"load": 5.0, "fill": None},
        bytes={"load": 4000},
        section_counts={"timing": {"load": 2, "select": 1}, "memory": {"load": 1, "fill": 1}},
        custom={"njets": 10, "label": "x"},
    ),
    chunk(
        dataset="dy",
        duration=4.0,
        task_duration=5.0,
        process_cpu_seconds=2.5,
        mem_delta_mib=-2.0,
        num_events=3000,
        file="/data/a.root",
        entry_start=1000,
        entry_stop=4000,
        t_start=T0 + 2,
        t_end=T0 + 6,
        bytes_read=None,
        timing={"load": 1.5},
        section_counts={"timing": {"load": 3}},
        custom={"njets": 30},
    ),
    chunk(
        dataset="tt",
        duration=3.0,
        task_duration=None,
        process_cpu_seconds=2.0,
        mem_delta_mib=None,
        num_events=500,
        file="/data/b.root",
        entry_start=0,
        entry_stop=500,
        timing={"load": 1.0},
        section_counts={"timing": {"load": 1}},
    ),
    chunk(dataset="tt", duration=0.1, num_events=700, error="ValueError: bad", entry_start=500),
]


def test_counts_and_failures() -> None:
    m = metrics_of(chunks=CHUNKS)
    assert m["num_chunks"] == 4
    assert m["num_successful_chunks"] == 3
    assert m["num_failed_chunks"] == 1
    [failure] = m["failed_chunks"]
    assert failure["dataset"] == "tt"
    assert failure["entry_start"] == 500
    assert failure["error"] == "ValueError: bad"
    assert m["raw_chunk_metrics"] == CHUNKS


def test_distributions_over_successful_chunks() -> None:
    m = metrics_of(chunks=CHUNKS)
    assert (m["chunk_duration_mean"], m["chunk_duration_min"], m["chunk_duration_max"]) == (
        3.0,
        2.0,
        4.0,
    )
    assert m["chunk_duration_std"] == 1.0
    assert (m["chunk_task_duration_mean"], m["chunk_task_duration_std"]) == (4.0, math.sqrt(2))
    assert m["chunk_cpu_time_mean"] == 2.0
    assert close(m["chunk_cpu_time_std"], 0.5)
    assert (m["chunk_mem_delta_mean_mib"], m["chunk_mem_delta_min_mib"]) == (4.0, -2.0)
    assert m["chunk_mem_delta_max_mib"] == 10.0
    assert close(m["chunk_mem_delta_std_mib"], math.sqrt(72.0))
    assert m["total_events_from_chunks"] == 4500
    assert isinstance(m["total_events_from_chunks"], int)
    assert (m["chunk_events_mean"], m["chunk_events_min"], m["chunk_events_max"]) == (
        1500.0,
        500.0,
        3000.0,
    )
    assert close(m["chunk_events_std"], math.sqrt(3_500_000 / 2))


def test_per_dataset() -> None:
    table = metrics_of(chunks=CHUNKS)["per_dataset"]
    assert table["dy"] == {
        "num_chunks": 2,
        "num_failed": 0,
        "total_duration": 6.0,
        "total_task_duration": 8.0,
        "total_events": 4000,
        "mean_duration": 3.0,
        "mean_events_per_chunk": 2000.0,
        "events_per_second": 4000 / 6.0,
    }
    assert table["tt"] == {
        "num_chunks": 2,
        "num_failed": 1,
        "total_duration": 3.0,
        "total_task_duration": None,  # the successful tt chunk lacks it
        "total_events": 500,
        "mean_duration": 3.0,
        "mean_events_per_chunk": 500.0,
        "events_per_second": 500 / 3.0,
    }


def test_chunk_info_keeps_unmeasured_bytes_as_none() -> None:
    info = metrics_of(chunks=CHUNKS)["chunk_info"]
    assert info == {
        ("/data/a.root", 0, 1000): (T0 + 1, T0 + 3, 5000),
        ("/data/a.root", 1000, 4000): (T0 + 2, T0 + 6, None),
        ("/data/b.root", 0, 500): (T0 + 1, T0 + 3, 5000),
    }


def test_sections_accumulate_across_chunks() -> None:
    sections = metrics_of(chunks=CHUNKS)["sections"]
    load = sections["timing"]["load"]
    assert (load["count"], load["total"], load["mean"], load["min"], load["max"]) == (
        3,
        3.0,
        1.0,
        0.5,
        1.5,
    )
    assert (load["std"], load["calls"], load["non_numeric"]) == (0.5, 6, 0)
    select = sections["timing"]["select"]
    assert (select["count"], select["std"], select["calls"]) == (1, None, 1)
    assert sections["memory"]["load"]["total"] == 5.0
    assert sections["memory"]["fill"] == {"count": 0, "non_numeric": 1, "calls": 1}
    assert sections["bytes"]["load"]["total"] == 4000
    assert sections["bytes"]["load"]["calls"] is None  # its record has no count for it
    njets = sections["custom"]["njets"]
    assert (njets["count"], njets["total"], njets["mean"], njets["non_numeric"]) == (2, 40, 20, 0)
    assert close(njets["std"], math.sqrt(200.0))
    assert sections["custom"]["label"] == {"count": 0, "non_numeric": 1, "calls": None}


def test_unmeasured_fields_say_why() -> None:
    why = {"mem_delta_mib": "psutil is not installed"}
    m = metrics_of(
        chunks=[chunk(mem_delta_mib=None, unavailable=why, entry_start=i) for i in range(2)]
    )
    assert m["chunk_mem_delta_mean_mib"] is None
    assert m["unavailable"]["chunk_mem_delta_mean_mib"] == (
        "2 of 2 chunk records lack 'mem_delta_mib' (psutil is not installed)"
    )
    assert m["chunk_duration_std"] == 0.0


def test_a_single_chunk_has_no_spread() -> None:
    m = metrics_of(chunks=[chunk()])
    assert m["chunk_duration_mean"] == 2.0
    assert m["chunk_duration_std"] is None
    assert "at least 2 values" in m["unavailable"]["chunk_duration_std"]


def test_only_failed_chunks() -> None:
    m = metrics_of(chunks=[chunk(error="OSError: gone")])
    assert (m["num_successful_chunks"], m["num_failed_chunks"]) == (0, 1)
    assert m["chunk_duration_mean"] is None
    assert m["unavailable"]["chunk_duration_mean"] == "no successful chunk record"
    assert m["per_dataset"]["dy"]["total_events"] is None
    assert m["chunk_info"] == {}


def test_no_chunk_records() -> None:
    m = metrics_of()
    assert m["raw_chunk_metrics"] == []
    keys = [key for stats in DISTRIBUTIONS.values() for key in stats.values()]
    for key in (*keys, "num_failed_chunks", "per_dataset", "chunk_info", "sections"):
        assert m[key] is None
        assert "@track_metrics" in m["unavailable"][key]


def test_each_work_item_counts_once_and_recomputations_are_reported() -> None:
    # Item (a, 0-1000) ran three times: failed, then succeeded on a worker that died
    # before its result was used, then again; (b, 0-500) once.
    failed = chunk(num_events=1000, error="OSError: xrootd", process_cpu_seconds=0.5, duration=0.6)
    lost = chunk(num_events=1000, process_cpu_seconds=1.0, duration=1.5, t_end=T0 + 2)
    kept = chunk(num_events=1000, process_cpu_seconds=1.25, duration=1.75, t_end=T0 + 9)
    other = chunk(file="/data/b.root", entry_stop=500, num_events=500)
    m = metrics_of(chunks=[failed, lost, other, kept])
    assert m["num_chunks"] == 2
    assert m["num_successful_chunks"] == 2
    assert m["num_failed_chunks"] == 0  # its item succeeded in the end
    assert m["total_events_from_chunks"] == 1500
    assert m["per_dataset"]["dy"]["num_chunks"] == 2
    assert m["per_dataset"]["dy"]["total_duration"] == 1.75 + 2.0
    assert m["raw_chunk_metrics"] == [kept, other]
    assert m["recomputed_chunks"] == 2
    assert m["recomputed_chunk_cpu_seconds"] == 0.5 + 1.0
    assert m["recomputed_chunk_seconds"] == 0.6 + 1.5
    assert m["recomputed_events"] == 2000
    assert m["recomputed_chunk_records"] == [failed, lost]


def test_the_monitoring_cost_is_unmeasured_when_a_record_lacks_it() -> None:
    old = chunk(entry_start=5)
    del old["instrument_seconds"]
    m = metrics_of(chunks=[chunk(), old])
    assert m["instrument_seconds"] is None and m["monitoring_seconds_per_chunk"] is None
    assert "lack 'instrument_seconds'" in m["unavailable"]["instrument_seconds"]
    assert m["unavailable"]["monitoring_percent"].startswith("needs instrument_seconds")


def test_without_the_phase_clock_the_monitoring_cost_is_the_instrumentation_alone() -> None:
    # No task measured by the phase clock (RoastPlugin(phases=False)): it ran no hook.
    first = chunk(instrument_seconds=0.003, task_duration=1.0)
    second = chunk(entry_start=5, instrument_seconds=0.001, task_duration=1.0)
    m = metrics_of(chunks=[first, second])
    assert m["phase_tasks"] is None and m["phase_clock_seconds"] is None
    assert m["monitoring_seconds_per_chunk"] == pytest.approx(0.004 / 2)
    assert m["monitoring_percent"] == pytest.approx(100 * 0.004 / 2.0)


def test_an_item_that_never_succeeded_is_one_failed_chunk() -> None:
    tries = [chunk(error="OSError: gone", entry_start=7) for _ in range(3)]
    m = metrics_of(chunks=tries)
    assert (m["num_chunks"], m["num_failed_chunks"], m["recomputed_chunks"]) == (1, 1, 2)


def test_records_without_a_work_item_are_all_kept() -> None:
    loose = [chunk(file=None, entry_start=None, entry_stop=None) for _ in range(2)]
    m = metrics_of(chunks=loose)
    assert (m["num_chunks"], m["recomputed_chunks"]) == (2, 0)
    assert m["recomputed_chunk_cpu_seconds"] == 0
