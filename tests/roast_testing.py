"""Helpers for the plugin tests: reading Dask's own numbers and comparing them to ours."""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from distributed import Client

T = TypeVar("T")

#: Only Dask's span metrics have this synthetic entry; it is not a worker digest.
IDLE_KEY = ("execute", "N/A", "idle or other spans", "seconds")

#: Digest contexts whose keys carry a span id.
SPAN_CONTEXTS = ("execute", "p2p")


def keys(prefix: str, n: int) -> list[str]:
    """``n`` unique task keys whose ``key_split`` is ``prefix``.

    Dask puts tasks into TaskGroups by prefix, and a group keeps the span of
    its first tasks while any of them lives; a prefix no other test uses keeps
    every task of a test in that test's span.
    """
    token = uuid.uuid4().hex
    return [f"{prefix}-{i}-{token}" for i in range(n)]


def wait_for(produce: Callable[[], T], done: Callable[[T], bool], timeout: float) -> T:
    """Call ``produce`` until ``done`` accepts its value or ``timeout`` passes.

    Returns the last value either way, so the caller's assertion shows it.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = produce()
        if done(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def dask_span_metrics(client: Client, span_id: str) -> dict[tuple, float]:
    """Dask's ``Span.cumulative_worker_metrics`` of a span, without the idle entry."""

    def read(dask_scheduler: Any, span_id: str) -> list:
        span = dask_scheduler.extensions["spans"].spans[span_id]
        return [(list(k), v) for k, v in span.cumulative_worker_metrics.items()]

    pairs = client.run_on_scheduler(read, span_id=span_id)
    metrics = {tuple(k): v for k, v in pairs}
    metrics.pop(IDLE_KEY, None)
    return metrics


def our_span_metrics(snap: dict[str, Any]) -> dict[tuple, float]:
    """Our per-worker digests of a span snapshot, summed over workers and sub-spans."""
    out: dict[tuple, float] = defaultdict(float)
    for (_, context, _, prefix, activity, unit), value in snap["digests"].items():
        if context in SPAN_CONTEXTS:
            out[(context, prefix, activity, unit)] += value
    return dict(out)


def mismatches(ours: dict, theirs: dict, rel: float = 1e-9) -> dict:
    """Keys whose values differ beyond ``rel``, as ``{key: (ours, theirs)}``."""
    bad = {}
    for key in ours.keys() | theirs.keys():
        a, b = ours.get(key), theirs.get(key)
        if a is None or b is None or not math.isclose(a, b, rel_tol=rel, abs_tol=1e-12):
            bad[key] = (a, b)
    return bad


#: Titles of the tables every summary shows, terminal and HTML alike.
SUMMARY_TABLES = (
    "Throughput Metrics",
    "Event Processing Metrics",
    "Resource Utilization",
    "Timing Breakdown",
    "Fine Metrics (from Dask Spans)",
    "Fine Metrics per Task Prefix",
    "Fine Metrics per Worker",
    "Chunk Metrics",
    "Monitoring Overhead",
)


def run_in_threads(work: Callable[[Any], None], args: Iterable[Any], timeout: float = 60) -> None:
    """``work(arg)`` for each arg, each in a thread of its own, all at once; waits for them."""
    threads = [threading.Thread(target=work, args=(arg,)) for arg in args]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
