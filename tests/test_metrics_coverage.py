"""record_coverage: the chunk records against coffea's count, and the cause of a shortfall."""

from __future__ import annotations

from typing import Any

from test_metrics_support import chunk, counters_report, make_snapshot, metrics_of

from roastcoffea.metrics.coverage import UNEXPLAINED
from roastcoffea.report.answer import shortfall

W2 = "tcp://10.0.0.2:4000"


def chunks(n: int, dataset: str = "dy", events: int = 1000) -> list[dict[str, Any]]:
    return [
        chunk(dataset=dataset, entry_start=i * events, entry_stop=(i + 1) * events)
        for i in range(n)
    ]


def report(n_chunks: int, entries: int) -> dict[str, Any]:
    return {"chunks": n_chunks, "entries": entries, "bytesread": 1, "processtime": 1.0}


def test_complete_records_have_no_cause() -> None:
    coverage = metrics_of(chunks=chunks(4), coffea_report=report(4, 4000))["record_coverage"]
    assert coverage == {
        "chunks_recorded": 4,
        "chunks_reported": 4,
        "chunks_missing": 0,
        "events_recorded": 4000,
        "events_reported": 4000,
        "events_missing": 0,
        "per_dataset": {},
        "complete": True,
        "causes": [],
    }


def test_an_unmonitored_worker_explains_the_missing_chunks() -> None:
    m = metrics_of(
        chunks=chunks(7),
        coffea_report=report(16, 16000),
        unmonitored={W2: "RoastWorkerPlugin.setup failed: RuntimeError: injected"},
    )
    coverage = m["record_coverage"]
    assert (coverage["chunks_missing"], coverage["events_missing"]) == (9, 9000)
    assert coverage["complete"] is False
    assert coverage["causes"] == [
        f"worker {W2} computed unmonitored (RoastWorkerPlugin.setup failed: RuntimeError: "
        "injected): its chunks sent no record"
    ]


def test_lost_and_dropped_records_are_causes() -> None:
    snapshot = make_snapshot(counters=counters_report(records_dropped=69))
    coverage = metrics_of(
        snapshot=snapshot,
        chunks=chunks(12),
        coffea_report=report(16, 16000),
        records_lost={"chunk: field 'dataset' is not encodable (UnicodeEncodeError)": 1},
    )["record_coverage"]
    assert coverage["chunks_missing"] == 4
    assert coverage["causes"] == [
        "1 record(s) lost on the workers (chunk: field 'dataset' is not encodable "
        "(UnicodeEncodeError))",
        "69 record(s) dropped by the scheduler's record store at its byte cap (counted for "
        "the whole cluster since the plugin started, not for this run)",
    ]


def test_a_shortfall_without_a_known_cause_says_so() -> None:
    coverage = metrics_of(chunks=chunks(3), coffea_report=report(4, 4000))["record_coverage"]
    assert coverage["causes"] == [UNEXPLAINED]


def test_a_dataset_short_of_its_entries_is_named() -> None:
    m = metrics_of(
        chunks=chunks(2, "dy") + chunks(3, "tt"),
        coffea_report=report(5, 5000),
        custom_metrics={"dy": {"entries": 2000}, "tt": {"entries": 4000}},
    )
    coverage = m["record_coverage"]
    assert coverage["per_dataset"] == {
        "dy": {"events_recorded": 2000, "events_reported": 2000, "events_missing": 0},
        "tt": {"events_recorded": 3000, "events_reported": 4000, "events_missing": 1000},
    }
    assert coverage["complete"] is False and coverage["causes"] == [UNEXPLAINED]


def test_failed_chunks_are_not_coverage() -> None:
    records = [*chunks(3), chunk(entry_start=5000, entry_stop=6000, error="ValueError: x")]
    coverage = metrics_of(chunks=records, coffea_report=report(4, 4000))["record_coverage"]
    assert (coverage["chunks_recorded"], coverage["chunks_missing"]) == (3, 1)


def test_without_a_report_it_is_none_with_the_reason() -> None:
    m = metrics_of(chunks=chunks(2))
    assert m["record_coverage"] is None
    assert m["unavailable"]["record_coverage"] == "no coffea report set"


def test_a_report_without_counts_compares_nothing() -> None:
    coverage = metrics_of(chunks=chunks(2), coffea_report={"bytesread": 1})["record_coverage"]
    assert coverage["chunks_missing"] is None and coverage["events_missing"] is None
    assert coverage["complete"] is None and coverage["causes"] == []


def test_the_shortfall_of_a_malformed_coverage_is_still_one_line() -> None:
    # A loaded file's coverage the schema lets through with fields missing or odd.
    hostile = {
        "complete": False,
        "chunks_recorded": 3,
        "per_dataset": {"dy": {"events_missing": 5}, "tt": 7},
        "causes": "not a list",
    }
    assert shortfall({"record_coverage": hostile}) == "The records cover not all of coffea's count."
    m = metrics_of(chunks=chunks(1), coffea_report=report(2, 2000))
    assert shortfall(m) == f"The records cover 1 of 2 chunks, 1,000 of 2,000 events: {UNEXPLAINED}."
