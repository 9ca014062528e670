"""The Prometheus export's label bounds and chunk totals, on plain data."""

from __future__ import annotations

import math

from roastcoffea.plugin.prometheus import (
    CHUNK_DURATION_BUCKETS,
    FOLDED,
    ChunkTotals,
    _fold_prefixes,
)


def test_prefixes_beyond_the_bound_fold_into_one_label_keeping_every_second() -> None:
    totals = {
        ("big", "thread-cpu", "seconds"): 10.0,
        ("mid", "thread-cpu", "seconds"): 5.0,
        ("small", "thread-cpu", "seconds"): 1.0,
        ("tiny", "thread-cpu", "seconds"): 0.5,
        ("small", "disk-read", "bytes"): 100.0,
    }
    folded, count = _fold_prefixes(totals, max_prefixes=2)
    assert count == 2
    assert folded == {
        ("big", "thread-cpu", "seconds"): 10.0,
        ("mid", "thread-cpu", "seconds"): 5.0,
        (FOLDED, "thread-cpu", "seconds"): 1.5,
        (FOLDED, "disk-read", "bytes"): 100.0,
    }
    assert _fold_prefixes(totals, max_prefixes=10) == (totals, 0)


def test_chunk_totals_count_per_dataset_within_the_bound() -> None:
    totals = ChunkTotals(max_datasets=2)
    durations = [0.05, 0.1, 0.3, 7.0, 400.0, math.nan, -1.0]
    for i, duration in enumerate(durations):
        totals.add(
            {
                "kind": "chunk",
                "dataset": ("a", "b", "c")[i % 3],
                "num_events": 10,
                "bytes_read_task": None if i == 0 else 1000,
                "bytes_read": 7,
                "duration": duration,
            }
        )
    totals.add({"kind": "phases", "dataset": "a", "num_events": 99})  # not a chunk
    assert dict(totals.chunks) == {"a": 3, "b": 2, FOLDED: 2}
    assert dict(totals.events) == {"a": 30, "b": 20, FOLDED: 20}
    assert dict(totals.bytes_read) == {"a": 7 + 1000 + 1000, "b": 2000, FOLDED: 2000}
    # NaN and negative durations are not durations; 0.1 falls in the 0.1 bucket (le)
    assert sum(totals.buckets) == 5
    assert totals.buckets[CHUNK_DURATION_BUCKETS.index(0.1)] == 2
    assert totals.buckets[-1] == 1  # 400 s: beyond the last bound
    assert totals.duration_sum == 0.05 + 0.1 + 0.3 + 7.0 + 400.0
