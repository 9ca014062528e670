"""The scheduler's spans reach the aggregator once each, in Dask's order, new ones at the next sync.

A real in-process scheduler and worker: Dask's own span store, never a mock of it.
"""

from __future__ import annotations

from distributed import Client, LocalCluster, span

from roastcoffea._native import Aggregator
from roastcoffea.plugin.dask_versions import spans_extension
from roastcoffea.plugin.scheduler.spans import SpanTree


def inc(x: int) -> int:
    return x + 1


def dec(x: int) -> int:  # a task group of its own: Dask files a group's tasks in one span
    return x - 1


def test_each_span_reaches_the_aggregator_once() -> None:
    with (
        LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as cluster,
        Client(cluster) as client,
    ):
        spans = spans_extension(cluster.scheduler).spans
        aggregator = Aggregator()
        tree = SpanTree(cluster.scheduler, aggregator)
        with span("first"):
            assert client.submit(inc, 1).result() == 2
        assert tree.sync() == len(spans) >= 1
        assert tree.sync() == 0
        with span("second"), span("inner"):
            assert client.submit(dec, 2).result() == 1
        assert tree.sync() == 2
        assert tree.sent == len(spans)
        held = aggregator.to_dict()["spans"]
        assert set(held) == set(spans)
        inner = next(s for s in spans.values() if s.name[-1] == "inner")
        assert held[inner.id]["parent"] == inner.parent.id
