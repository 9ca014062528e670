"""The wall split, the tail, the shape of the reads and the cost per event on known inputs."""

from __future__ import annotations

from typing import Any

import pytest
from test_metrics_support import (
    T0,
    W1,
    W2,
    chunk,
    make_series,
    make_snapshot,
    metrics_of,
    point,
    worker_info,
)

from roastcoffea import compare_costs, compare_runs, regressions_above
from roastcoffea.metrics.diagnosis import read_findings
from roastcoffea.metrics.hot_lines import with_leaves
from roastcoffea.metrics.regression import ONE_RUN_FLOOR_PERCENT

FILE_A, FILE_B = "root://eos/a.root", "root://eos/b.root"


def phase_record(
    start: float, stop: float, worker: str = W1, file: str = FILE_A, **wall: float
) -> dict[str, Any]:
    """A phase record of a task running ``[T0 + start, T0 + stop]`` on ``worker``."""
    phases = {"open": 0.0, "read": 0.0, "decompress": 0.0, "interpret": 0.0, "user": 0.0}
    phases.update(wall)
    phases["other"] = max(stop - start - sum(phases.values()), 0.0)
    return {
        "kind": "phases",
        "task_key": f"proc-{start}-{worker}",
        "worker": worker,
        "dataset": "dy",
        "file": file,
        "entry_start": int(start * 1000),
        "entry_stop": int(start * 1000) + 1000,
        "t_start": T0 + start,
        "t_stop": T0 + stop,
        "wall": phases,
        "cpu": {p: s / 2 for p, s in phases.items()},
    }


def two_workers() -> dict[str, Any]:
    """Two single-threaded workers live over the whole 10 s window."""
    series = make_series([point(T0 - 1), point(T0 + 11)])
    workers = {W1: worker_info(), W2: worker_info()}
    return make_snapshot(series={W1: series, W2: series}, workers=workers)


def split_of(records: list[dict[str, Any]]) -> dict[str, Any]:
    return metrics_of(snapshot=two_workers(), phases=records)


def test_the_stages_tile_the_window_and_count_idle_thread_seconds() -> None:
    # W1: 1-3, 3-5; W2: 1-4, then 4-9 (long): both busy 1-5, tail 5-9.
    m = split_of(
        [
            phase_record(1, 3),
            phase_record(3, 5),
            phase_record(1, 4, W2),
            phase_record(4, 9, W2, FILE_B, read=4.0),
        ]
    )
    split = m["wall_split"]
    assert [split[s]["seconds"] for s in ("startup", "steady", "tail", "finish")] == [1, 4, 4, 1]
    assert split["startup"]["idle_thread_seconds"] == 2.0
    assert split["steady"]["idle_thread_seconds"] == 0.0
    assert split["tail"]["idle_thread_seconds"] == 4.0
    assert split["finish"]["idle_thread_seconds"] == 2.0
    assert m["idle_thread_seconds"] == 8.0
    assert m["processing_seconds"] == 8.0
    assert m["packing_bound_seconds"] == pytest.approx(12 / 2)
    assert m["longest_chunk_seconds"] == 5.0
    (tail,) = m["tail_chunks"]
    assert tail["file"] == FILE_B and tail["cause"] == "read" and tail["tail_seconds"] == 4.0
    assert tail["vs_median"] == pytest.approx(5 / 2.5)


def test_a_file_slow_on_every_chunk_is_the_tail_s_cause_and_the_advice_names_it() -> None:
    fast = [phase_record(t, t + 1, w) for t in range(1, 5) for w in (W1, W2)]
    slow = phase_record(5, 9, W1, FILE_B, read=3.5)
    m = split_of([*fast, phase_record(5, 6, W2), slow])
    assert m["tail_cause"] == {
        "kind": "file",
        "name": FILE_B,
        "vs_others": 4.0,
        "phase": "read",
        "dataset": "dy",
    }
    finding = next(f for f in m["diagnosis"] if f["rule"] == "tail")
    assert FILE_B in finding["message"] and "storage" in finding["message"]


def test_a_worker_slow_on_every_file_is_the_tail_s_cause() -> None:
    records = [phase_record(t, t + 1, W1, f) for t, f in ((1, FILE_A), (2, FILE_B), (3, FILE_A))]
    records += [phase_record(1, 4, W2, FILE_B, user=2.5), phase_record(4, 8, W2, FILE_A, user=3)]
    m = split_of(records)
    assert m["tail_cause"]["kind"] == "worker" and m["tail_cause"]["name"] == W2
    assert m["tail_cause"]["phase"] == "user"


def test_without_task_times_or_threads_the_split_says_why() -> None:
    record = phase_record(1, 2)
    record["t_stop"] = None
    m = metrics_of(snapshot=two_workers(), phases=[record])
    assert m["wall_split"] is None
    assert "lack Dask's task stop" in m["unavailable"]["wall_split"]
    m = metrics_of(phases=[phase_record(1, 2)])
    assert "thread count" in m["unavailable"]["tail_chunks"]


def read_chunk(file: str, start: int, requests: int, fetched: int, opened: int) -> dict[str, Any]:
    return chunk(
        file=file,
        entry_start=start,
        entry_stop=start + 100,
        read_requests_task=requests,
        read_ranges_task=2 * requests,
        bytes_read_task=fetched,
        open_requests=3,
        open_bytes=opened,
        accessed_bytes=fetched - opened,
    )


def test_read_shapes_sum_the_counters_and_the_rules_name_the_files() -> None:
    chunks = [read_chunk(FILE_A, s, 40, 400_000, 300_000) for s in (0, 100, 200)]
    m = metrics_of(chunks=chunks)
    shape = m["read_shapes"][FILE_A]
    assert (shape["requests"], shape["ranges"], shape["chunks"]) == (120, 240, 3)
    assert shape["bytes_per_request"]["median"] == 10_000
    assert shape["metadata_percent"] == 75.0 and shape["amplification"] == 1.0
    assert m["metadata_bytes"] == 900_000 and m["read_requests"] == 120
    rules = {f.rule: f.message for f in read_findings(m["read_shapes"])}
    assert set(rules) == {"small-requests", "metadata-reread"}
    assert FILE_A in rules["small-requests"] and "9.77 kiB" in rules["small-requests"]


def test_a_local_file_s_small_requests_are_no_finding() -> None:
    chunks = [read_chunk("/data/a.root", s, 40, 400_000, 1000) for s in (0, 100)]
    assert read_findings(metrics_of(chunks=chunks)["read_shapes"]) == []


def test_read_shapes_need_every_chunk_s_counters() -> None:
    m = metrics_of(chunks=[read_chunk(FILE_A, 0, 4, 10, 5), chunk(read_requests_task=None)])
    assert m["read_shapes"] is None and "read_requests_task" in m["unavailable"]["read_shapes"]


def costed(user_us: float, n: int, dataset: str = "dy") -> list[dict[str, Any]]:
    """``n`` phase records of 1,000 events each, the user phase at about ``user_us`` per event."""
    records = []
    for i in range(n):
        record = phase_record(i, i + 1)
        record["dataset"] = dataset
        spread = 1 + 0.02 * (i % 5)  # a spread of 8 %, as chunks have
        record["cpu"] = {"open": 0.01, "user": user_us * 1e-3 * spread, "other": 0.001}
        records.append(record)
    return records


def test_cost_per_event_per_dataset_and_phase() -> None:
    m = metrics_of(phases=costed(40.0, 4))
    table = m["cost_per_event_us"]["dy"]
    assert table["open"] == pytest.approx(10.0)
    assert table["user"] == pytest.approx(40.0 * 1.03)
    assert table["all"] == pytest.approx(10.0 + 40.0 * 1.03 + 1.0)


def test_compare_marks_a_real_slow_down_and_not_the_same_cost() -> None:
    before = {"raw_phase_records": costed(40.0, 8)}
    changes = compare_costs(before, {"raw_phase_records": costed(80.0, 8)})
    marked = {(c.dataset, c.phase) for c in changes if c.marked}
    assert marked == {("dy", "user"), ("dy", "all")}
    user = next(c for c in changes if c.phase == "user")
    assert user.change_percent == pytest.approx(100.0) and user.low > 0
    assert [c.phase for c in regressions_above(changes, 50)] == ["all", "user"]
    same = compare_costs(before, {"raw_phase_records": costed(40.0, 8)})
    assert not [c for c in same if c.marked]
    # One run per side: 10 % slower, far outside the chunks' spread, is under the floor
    # identical runs reach on a loaded machine...
    slower = compare_costs(before, {"raw_phase_records": costed(44.0, 8)})
    assert not [c for c in slower if c.marked]
    assert all(c.note == f"under {ONE_RUN_FLOOR_PERCENT:g}%" for c in slower if c.phase == "user")
    # ...and 15 % is marked with runs that agree with each other on both sides.
    runs = compare_runs([before] * 3, [{"raw_phase_records": costed(46.0, 8)}] * 3)
    assert ("dy", "user") in {(c.dataset, c.phase) for c in runs.changes if c.marked}
    assert runs.noise == "runs" and "spread is the noise" in runs.note


def test_compare_without_phase_records_or_in_common_says_why() -> None:
    with pytest.raises(ValueError, match="before run 1 has no phase records"):
        compare_costs({"raw_phase_records": None}, {"raw_phase_records": costed(1.0, 2)})
    with pytest.raises(ValueError, match="no dataset and phase in common"):
        compare_costs(
            {"raw_phase_records": costed(1.0, 4, "dy")},
            {"raw_phase_records": costed(1.0, 4, "ttbar")},
        )
    with pytest.raises(ValueError, match="alpha"):
        compare_runs([{"raw_phase_records": costed(1.0, 4)}] * 2, [{}], alpha=float("nan"))


def frame(name: str, file: str, count: int, *children: dict[str, Any]) -> dict[str, Any]:
    """A node of Dask's profile tree (``distributed.profile`` layout)."""
    return {
        "count": count,
        "identifier": f"{name};{file};10",
        "description": {"filename": file, "name": name, "line_number": 12, "line": "x = 1"},
        "children": {c["identifier"]: c for c in children},
    }


USER = "/home/me/analysis.py"
UPROOT = "/venv/lib/python3.11/site-packages/uproot/source/file.py"
NUMPY = "/venv/lib/python3.11/site-packages/numpy/core/fromnumeric.py"


def test_the_innermost_frames_get_the_samples_dask_counts_in_their_callers() -> None:
    # Dask counts a sample in every frame but the innermost: process() holds 10 samples,
    # its callees' counts 0 (spin, only ever innermost) and 3 (np.sum, innermost 1 time).
    tree = frame(
        "root",
        "",
        10,
        frame(
            "process",
            USER,
            10,
            frame("spin", USER, 0),
            frame("sum", NUMPY, 3, frame("_wrapreduction", NUMPY, 0)),
            frame("read", UPROOT, 2, frame("pread", UPROOT, 0)),
        ),
    )
    tree["description"] = "root"
    m = metrics_of(profiles={W1: {"proc": with_leaves(tree)}})
    hot = {h["function"]: h for h in m["hot_lines"]}
    # 10 - 3 - 2 = 5 samples had a callee of process innermost: the one only ever innermost.
    assert hot["spin"]["samples"] == 5
    # np.sum's 3 samples are the user's (native work it called), uproot's 2 are data input.
    assert hot["process"]["samples"] == 3 and hot["process"]["inclusive_samples"] == 8
    assert m["user_profile_samples"] == 8
    assert hot["spin"]["share_percent"] == pytest.approx(62.5)
    assert (hot["spin"]["file"], hot["spin"]["line"]) == (USER, 10)


def test_without_samples_the_hot_lines_say_why() -> None:
    empty = {"count": 0, "identifier": "root", "description": "root", "children": {}}
    m = metrics_of(profiles={W1: {"proc": with_leaves(empty)}})
    assert m["hot_lines"] is None and "profile.enabled" in m["unavailable"]["hot_lines"]
    m = metrics_of(profile_reason="hot lines are off (roastcoffea.hot-lines: false)")
    assert m["unavailable"]["profile_tree"] == "hot lines are off (roastcoffea.hot-lines: false)"
