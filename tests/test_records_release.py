"""What a run carries: each collector's exit ships and releases its own records only.

A long-lived cluster runs measured coffea workloads one after the other with the
same plugin. Every exit must carry the records of its own span (and none of the
earlier runs'), and leave none of them on the scheduler; a collector nested in
another streams and releases nothing, so the outer one still gets the inner run's chunks.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from distributed import Client, LocalCluster, span
from measured_run import MeasuredProcessor, cms_fileset, dask_runner, measure

from roastcoffea import MetricsCollector
from roastcoffea.plugin import snapshot
from roastcoffea.records import decode_records


def held_records(client: Client) -> list[dict[str, Any]]:
    """The records the scheduler holds, all spans (no flush, no release)."""
    return decode_records(snapshot(client, flush=False)["records"])


def run_measured(client: Client, cms_data: Path, tmp_path: Path) -> MetricsCollector:
    return measure(client, cms_data, tmp_path).collector


@pytest.fixture
def fresh(make_cluster: Callable[..., tuple[LocalCluster, Client]]) -> Client:
    return make_cluster()[1]


def test_consecutive_runs_carry_their_own_records_only(
    fresh: Client, cms_data: Path, tmp_path: Path
) -> None:
    first = run_measured(fresh, cms_data, tmp_path / "first")
    assert held_records(fresh) == []  # the exit released them
    second = run_measured(fresh, cms_data, tmp_path / "second")
    assert held_records(fresh) == []
    for collector in (first, second):
        chunks = collector.coffea_report["chunks"]
        assert len(collector.chunk_metrics) == chunks
        assert len(collector.run.phases) == chunks
        # nothing of the other run, whether streamed during the run or carried by the exit
        records = [*collector.chunk_metrics, *collector.run.phases]
        assert {r["span"] for r in records} <= collector.run.span_ids


def test_a_nested_collector_leaves_its_records_to_the_enclosing_one(
    fresh: Client, cms_data: Path, tmp_path: Path
) -> None:
    with MetricsCollector(fresh, live=False) as outer:
        inner = run_measured(fresh, cms_data, tmp_path)
        assert len(inner.chunk_metrics) == inner.coffea_report["chunks"]
    # the inner run streamed nothing and released nothing: the outer one took them all
    assert inner.run.records_streamed == 0
    assert len(outer.chunk_metrics) == len(inner.chunk_metrics)
    assert sorted(r["task_key"] for r in outer.chunk_metrics) == sorted(
        r["task_key"] for r in inner.chunk_metrics
    )
    assert held_records(fresh) == []


def test_records_of_spans_nobody_collects_stay_until_collected_or_aged_out(
    fresh: Client, cms_data: Path, tmp_path: Path
) -> None:
    runner = dask_runner(fresh)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with MetricsCollector(fresh, live=False):
            pass  # registers the plugin
        with span("uncollected"):
            _, report = runner(cms_fileset(cms_data), MeasuredProcessor(), treename="Events")
    held = [r for r in held_records(fresh) if r["kind"] == "chunk"]
    assert len(held) == report["chunks"]
    collector = run_measured(fresh, cms_data, tmp_path)
    assert len(collector.chunk_metrics) == collector.coffea_report["chunks"]
    still = [r for r in held_records(fresh) if r["kind"] == "chunk"]
    assert len(still) == report["chunks"]  # another span's: not this exit's to release
