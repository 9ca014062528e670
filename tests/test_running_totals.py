"""The scheduler's running totals and the messages that feed them, on plain data.

The totals the live stream, the Prometheus export and the dashboard read
(``plugin/scheduler/totals.py``), and the typed message shapes of
``plugin/protocol.py``: what a worker makes of a record, and what the scheduler
accepts from the wire.
"""

from __future__ import annotations

import math
from itertools import count

import pytest

from roastcoffea.phase_vocabulary import digest_labels
from roastcoffea.plugin.protocol import ChunkTotals, PhaseEntry
from roastcoffea.plugin.scheduler.totals import (
    CHUNK_DURATION_BUCKETS,
    FOLDED,
    MAX_RUNS,
    RunningTotals,
)


def test_chunks_count_in_all_per_dataset_within_the_bound_and_per_run() -> None:
    totals = RunningTotals(max_datasets=2)
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
        totals.add_chunk("run" if i < 4 else None, ChunkTotals.of_record(record))
    chunks = {d: t.chunks for d, t in totals.datasets.items()}
    assert chunks == {"a": 3, "b": 2, FOLDED: 2}
    assert {d: t.events for d, t in totals.datasets.items()} == {"a": 30, "b": 20, FOLDED: 20}
    assert {d: t.bytes_read for d, t in totals.datasets.items()} == {
        "a": 7 + 1000 + 1000,
        "b": 2000,
        FOLDED: 2000,
    }
    assert (totals.all.chunks, totals.all.events, totals.all.bytes_read) == (7, 70, 6007)
    assert (totals.runs["run"].chunks, totals.runs["run"].events) == (4, 40)
    # NaN and negative durations are not durations; 0.1 falls in the 0.1 bucket (le)
    assert sum(totals.buckets) == 5
    assert totals.buckets[CHUNK_DURATION_BUCKETS.index(0.1)] == 2
    assert totals.buckets[-1] == 1  # 400 s: beyond the last bound
    assert totals.duration_sum == 0.05 + 0.1 + 0.3 + 7.0 + 400.0
    assert totals.all.seconds == totals.duration_sum


def test_the_latest_runs_are_kept_and_phases_count_per_dataset_within_the_bound() -> None:
    clock = count()
    totals = RunningTotals(max_datasets=2, clock=lambda: float(next(clock)))
    for n in range(MAX_RUNS + 5):
        totals.add_chunk(f"run-{n}", ChunkTotals("ds", 10 * n, n, None))
    layout = (False, (), (), True)
    labels = digest_labels(layout)
    values = [2.0 if label == ("phase:user", "wall-seconds") else 0.5 for label in labels]
    totals.add_phases("run-7", "ds", labels, values)  # active again
    assert len(totals.runs) == MAX_RUNS
    assert list(totals.runs)[-1] == "run-7" and "run-0" not in totals.runs
    assert totals.runs["run-24"].events == 240
    assert totals.runs["run-7"].first < totals.runs["run-7"].last
    # A run with phases only (no chunk record) has its row too.
    totals.add_phases("phases-only", None, labels, values)
    assert totals.runs["phases-only"].chunks == 0
    for dataset in ("other-1", "other-2"):
        totals.add_phases("run-7", dataset, labels, values)
    walls = {d: dict(p) for d, p in totals.dataset_phases.items()}
    assert set(walls) == {"ds", "other-1", FOLDED}
    assert walls["ds"]["user"] == 2.0 and walls[FOLDED]["open"] == 0.5
    assert "output" not in walls["ds"]  # not measured in this layout


def test_a_record_s_totals_take_the_task_s_bytes_and_leave_out_what_is_unmeasured() -> None:
    of = ChunkTotals.of_record
    assert of(
        {"dataset": "d", "num_events": 5, "bytes_read_task": 9, "bytes_read": 7, "duration": 2}
    ) == ("d", 5, 9, 2.0)
    assert of({"num_events": 5, "bytes_read": 7, "duration": 0.5}) == (None, 5, 7, 0.5)
    # Unmeasured, negative or not numbers: nothing added, never an error.
    assert of({"dataset": 3, "num_events": None, "bytes_read": -1, "duration": math.inf}) == (
        None,
        0,
        0,
        None,
    )
    assert of({"num_events": True, "bytes_read": 2.0, "duration": -0.1}) == (None, 0, 0, None)


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
def test_chunk_totals_from_the_wire_refuse_a_malformed_entry(entry: object) -> None:
    with pytest.raises(ValueError, match="chunk totals"):
        ChunkTotals.from_wire(entry)


def test_chunk_totals_from_the_wire_take_lists_tuples_and_the_object_itself() -> None:
    assert ChunkTotals.from_wire(["d", 1, 2, 0.5]) == ("d", 1, 2, 0.5)
    assert ChunkTotals.from_wire((None, 0, 0, None)) == (None, 0, 0, None)
    same = ChunkTotals("d", 1, 2, None)
    assert ChunkTotals.from_wire(same) == same


def test_a_phase_entry_survives_the_wire_and_refuses_what_is_not_one() -> None:
    entry = PhaseEntry("s", "p", (True, ("zlib",), ("interpret",), True), [1.0, 2.0], "ds")
    # msgpack delivers it as lists (or tuples): the same entry comes back.
    assert PhaseEntry.from_wire([entry[0], entry[1], list(entry[2]), entry[3], entry[4]]) == entry
    back = PhaseEntry.from_wire(("s", "p", [1, ["zlib"], [], 0], (1.0,), 3))
    assert back.layout == (True, ("zlib",), (), False) and back.dataset is None
    for wrong in (
        None,
        ["s", "p", [True, [], []], [], None],
        ["s", 1, [True, [], [], 0], [], None],
    ):
        with pytest.raises(ValueError, match="phase entry"):
            PhaseEntry.from_wire(wrong)
    with pytest.raises(ValueError, match="codecs"):
        PhaseEntry.from_wire(["s", "p", [True, [3], [], False], [], None])
