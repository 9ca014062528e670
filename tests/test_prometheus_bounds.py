"""The Prometheus export's label bounds and chunk totals, on plain data."""

from __future__ import annotations

import math

import pytest

from roastcoffea.plugin.scheduler.prometheus import (
    CHUNK_DURATION_BUCKETS,
    FOLDED,
    ChunkTotals,
    fold_labels,
)
from roastcoffea.records import chunk_totals, read_chunk_totals


def test_prefixes_beyond_the_bound_fold_into_one_label_keeping_every_second() -> None:
    totals = {
        ("big", "thread-cpu", "seconds"): 10.0,
        ("mid", "thread-cpu", "seconds"): 5.0,
        ("small", "thread-cpu", "seconds"): 1.0,
        ("tiny", "thread-cpu", "seconds"): 0.5,
        ("small", "disk-read", "bytes"): 100.0,
    }
    folded, count = fold_labels(totals, 0, 2)
    assert count == 2
    assert folded == {
        ("big", "thread-cpu", "seconds"): 10.0,
        ("mid", "thread-cpu", "seconds"): 5.0,
        (FOLDED, "thread-cpu", "seconds"): 1.5,
        (FOLDED, "disk-read", "bytes"): 100.0,
    }
    assert fold_labels(totals, 0, 10) == (totals, 0)


def in_seconds(by_prefix_activity: dict[tuple[str, str], float]) -> dict[tuple, float]:
    return {
        (prefix, activity, "seconds"): v for (prefix, activity), v in by_prefix_activity.items()
    }


def test_activities_beyond_the_bound_fold_by_their_total() -> None:
    # The export folds each unit's family on its own: seconds, then bytes.
    kept = {("p", "thread-cpu"): 3.0, ("q", "thread-cpu"): 1.0, ("p", "user-act-1"): 2.0}
    seconds = in_seconds({**kept, ("p", "user-act-2"): 0.5})
    assert fold_labels(seconds, 1, 2) == (in_seconds({**kept, ("p", FOLDED): 0.5}), 1)
    nbytes = {("p", "disk-read", "bytes"): 100.0, ("p", "user-bytes", "bytes"): 5.0}
    assert fold_labels(nbytes, 1, 1) == (
        {("p", "disk-read", "bytes"): 100.0, ("p", FOLDED, "bytes"): 5.0},
        1,
    )


def test_chunk_totals_count_per_dataset_within_the_bound() -> None:
    totals = ChunkTotals(max_datasets=2)
    durations = [0.05, 0.1, 0.3, 7.0, 400.0, math.nan, -1.0]
    for i, duration in enumerate(durations):
        record = {
            "kind": "chunk",
            "dataset": ("a", "b", "c")[i % 3],
            "num_events": 10,
            "bytes_read_task": None if i == 0 else 1000,
            "bytes_read": 7,
            "duration": duration,
        }
        totals.add(*read_chunk_totals(chunk_totals(record)))
    assert dict(totals.chunks) == {"a": 3, "b": 2, FOLDED: 2}
    assert dict(totals.events) == {"a": 30, "b": 20, FOLDED: 20}
    assert dict(totals.bytes_read) == {"a": 7 + 1000 + 1000, "b": 2000, FOLDED: 2000}
    # NaN and negative durations are not durations; 0.1 falls in the 0.1 bucket (le)
    assert sum(totals.buckets) == 5
    assert totals.buckets[CHUNK_DURATION_BUCKETS.index(0.1)] == 2
    assert totals.buckets[-1] == 1  # 400 s: beyond the last bound
    assert totals.duration_sum == 0.05 + 0.1 + 0.3 + 7.0 + 400.0


def test_chunk_totals_take_the_tasks_bytes_and_leave_out_what_is_unmeasured() -> None:
    assert chunk_totals(
        {"dataset": "d", "num_events": 5, "bytes_read_task": 9, "bytes_read": 7, "duration": 2}
    ) == ["d", 5, 9, 2.0]
    assert chunk_totals({"num_events": 5, "bytes_read": 7, "duration": 0.5}) == [None, 5, 7, 0.5]
    # Unmeasured, negative or not numbers: nothing added, never an error.
    assert chunk_totals(
        {"dataset": 3, "num_events": None, "bytes_read": -1, "duration": math.inf}
    ) == [None, 0, 0, None]
    assert chunk_totals({"num_events": True, "bytes_read": 2.0, "duration": -0.1}) == [
        None,
        0,
        0,
        None,
    ]


@pytest.mark.parametrize(
    "entry",
    [
        None,
        b"chunk",
        ["d", 1, 2],
        ["d", 1, 2, 0.5, 9],
        [3, 1, 2, 0.5],
        ["d", -1, 2, 0.5],
        ["d", 1.0, 2, 0.5],
        ["d", 1, True, 0.5],
        ["d", 1, 2, 1],
        ["d", 1, 2, -0.5],
        ["d", 1, 2, math.nan],
    ],
)
def test_read_chunk_totals_refuses_a_malformed_entry(entry: object) -> None:
    with pytest.raises(ValueError, match="chunk totals"):
        read_chunk_totals(entry)


def test_read_chunk_totals_takes_lists_and_the_tuples_dask_delivers() -> None:
    assert read_chunk_totals(["d", 1, 2, 0.5]) == ("d", 1, 2, 0.5)
    assert read_chunk_totals((None, 0, 0, None)) == (None, 0, 0, None)
