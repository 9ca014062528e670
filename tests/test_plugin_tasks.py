"""Task statistics from our transition hook against Dask's task stream."""

from __future__ import annotations

import math
import operator
from collections import defaultdict
from typing import Any

import distributed
from dask.utils import key_split
from distributed import Client, get_task_stream, wait
from roast_testing import keys

from roastcoffea.demo.tasks import burn, combine, nap
from roastcoffea.plugin import snapshot


def expected_stats(records: list[dict[str, Any]], field: str) -> dict[str, dict[str, Any]]:
    """Task statistics per prefix (field="key") or worker (field="worker")."""
    out: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"tasks": 0, "erred": 0, "compute_seconds": 0.0, "transfer_seconds": 0.0}
    )
    for record in records:
        group = key_split(record["key"]) if field == "key" else record["worker"]
        if record.get("status") == "OK":
            out[group]["tasks"] += 1
            for action in ("compute", "transfer"):
                out[group][f"{action}_seconds"] += sum(
                    s["stop"] - s["start"] for s in record["startstops"] if s["action"] == action
                )
        else:
            out[group]["erred"] += 1
    return dict(out)


def assert_stats_equal(ours: dict[str, dict], expected: dict[str, dict]) -> None:
    # Rows of transitions that finished nothing (e.g. released->waiting) have no tasks.
    finished = {group for group, stats in ours.items() if stats["tasks"] or stats["erred"]}
    assert finished == set(expected)
    for group, stats in expected.items():
        assert ours[group]["tasks"] == stats["tasks"], group
        assert ours[group]["erred"] == stats["erred"], group
        for field in ("compute_seconds", "transfer_seconds"):
            assert math.isclose(ours[group][field], stats[field], rel_tol=1e-9, abs_tol=1e-12), (
                group,
                field,
            )


def test_prefix_counts_and_compute_equal_the_task_stream(roast: Client) -> None:
    client = roast
    with get_task_stream(client) as stream, distributed.span("tasks") as span_id:
        leaves = client.map(burn, [0.02] * 10, key=keys("stream-burn", 10))
        leaves += client.map(nap, [0.02] * 10, key=keys("stream-nap", 10))
        total = client.submit(combine, *leaves, key=keys("stream-combine", 1)[0])
        failed = client.submit(operator.truediv, 1, 0, key=keys("stream-div", 1)[0])
        wait([*leaves, total, failed])
    assert failed.status == "error"
    snap = snapshot(client, span_id=span_id)
    records = stream.data
    assert len(records) == 22
    assert_stats_equal(snap["prefixes"], expected_stats(records, "key"))
    assert_stats_equal(snap["worker_tasks"], expected_stats(records, "worker"))
    assert snap["counters"]["dropped_events"] == 0
