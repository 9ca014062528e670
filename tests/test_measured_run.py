"""The shared measured run is what the plot, report and command tests need."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest
from measured_run import CHUNKSIZE, DATASETS, Measured
from test_metrics_docs import FORBIDDEN
from uproot_truth import uproot_distinct_baskets

from roastcoffea import load_measurement
from roastcoffea.compat_0_1_2.names import DIFFERENT_IN_0_1_2, METRIC_ALIASES


def test_measured_run_has_every_kind_of_data(measured: Measured) -> None:
    metrics = measured.metrics
    assert metrics["num_chunks"] == 4 + 4 + 200 // CHUNKSIZE
    assert set(metrics["per_dataset"]) == set(DATASETS)
    assert metrics["processor_prefixes"] == ["MeasuredProcessor"]
    assert metrics["tracking_data"]["worker_counts"]
    assert metrics["raw_span_metrics"] and metrics["per_worker_fine_metrics"]
    assert set(metrics["sections"]["timing"]) == {"select"}
    loaded, _, _ = load_measurement(measured.path)
    assert loaded["num_chunks"] == metrics["num_chunks"]


def test_per_file_bytes_are_uproots_distinct_baskets(measured: Measured) -> None:
    # Chunks of 10 events share the baskets of these 40- and 200-event files: each
    # basket counts once per file, so no file reads more than 100 % of itself.
    metrics = measured.metrics
    by_file: dict[str, list[dict]] = defaultdict(list)
    for record in metrics["raw_chunk_metrics"]:
        by_file[record["file"]].append(record)
    assert len(by_file) == len(DATASETS)
    for path, records in by_file.items():
        branches = {b for r in records for b in r["accessed_branches"]}
        ranges = [(r["entry_start"], r["entry_stop"]) for r in records]
        expected = uproot_distinct_baskets(path, branches, ranges)
        ours = metrics["file_read_metrics"][path]
        assert ours["baskets_read"] == expected["baskets"], path
        assert ours["bytes_read"] == expected["compressed"], path
        assert ours["bytes_read_uncompressed"] == expected["uncompressed"], path
        assert (
            ours["bytes_read_percent"]
            == 100.0 * expected["compressed"] / expected["tree_compressed"]
        )
        assert 0 <= ours["bytes_read_percent"] <= 100.0  # 0: only embedded baskets read
        if expected["compressed"]:
            stored = ours["compression_ratio"]
            assert stored is not None and stored > 1.0, path  # uncompressed / compressed
    loaded, _, _ = load_measurement(measured.path)
    assert loaded["file_read_metrics"] == metrics["file_read_metrics"]


def test_the_instrumentations_own_time_fits_in_each_task(measured: Measured) -> None:
    """Measured outside process() and inside the task: it fits in what the task left over."""
    metrics = measured.metrics
    chunks = metrics["raw_chunk_metrics"]
    for chunk in chunks:
        own = chunk["instrument_seconds"]
        assert own > 0 and chunk["instrument_cpu_seconds"] >= 0
        assert chunk["duration"] + own <= chunk["task_duration"] + 1e-3  # two clocks
    total = sum(c["instrument_seconds"] for c in chunks)
    clock = metrics["phase_clock_seconds"]
    tasks = sum(c["task_duration"] for c in chunks)
    exact = {"rel": 1e-12}  # the same formulas, evaluated in another order
    assert metrics["instrument_seconds"] == pytest.approx(total, **exact)
    assert metrics["instrument_seconds_per_chunk"] == pytest.approx(total / len(chunks), **exact)
    per_chunk = (total + clock) / len(chunks)
    assert metrics["monitoring_seconds_per_chunk"] == pytest.approx(per_chunk, **exact)
    assert metrics["monitoring_percent"] == pytest.approx(100 * (total + clock) / tasks, **exact)


def _keys(value: Any, where: str = "") -> Iterator[tuple[str, str]]:
    """``(where, key)`` of every string key at any depth of dicts and lists."""
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                yield where, key
            yield from _keys(item, f"{where}/{str(key)[:40]}")
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _keys(item, f"{where}[]")


def test_every_key_of_a_real_run_follows_the_naming_rule(metrics: dict[str, Any]) -> None:
    # Rows (per_prefix, per_worker), records and evidence included; worker addresses and
    # file paths are keys too but end in no unit.
    bad = {(where, key) for where, key in _keys(metrics) if FORBIDDEN.search(key)}
    assert bad == set(), "docs/metrics.md, 'How keys are named'"


def test_a_real_run_answers_to_0_1_2_names_without_holding_them(
    metrics: dict[str, Any],
) -> None:
    assert not set(METRIC_ALIASES) & set(metrics)
    for old, ours in METRIC_ALIASES.items():
        if ours in metrics and ours not in DIFFERENT_IN_0_1_2:
            assert old in metrics and metrics[old] == metrics[ours] == metrics.get(old), old
    assert metrics["io_overhead_pct"] == metrics["io_overhead_percent"] is not None
