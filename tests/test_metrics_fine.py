"""Fine metrics: digests of the span -> processor vs overhead, sums per activity, tables."""

from __future__ import annotations

import math
import random

import pytest
from test_metrics_support import (
    SPAN,
    W1,
    W2,
    chunk,
    close,
    counters_report,
    make_snapshot,
    metrics_of,
    processor_metrics,
    span_digests,
    task_row,
    worker_info,
)

from roastcoffea.compat_0_1_2.names import METRIC_ALIASES
from roastcoffea.report.notebook import MetricsDict

PROCESSOR_SECONDS = (3.0, 4.5, 1.0, 1.5, 0.25, 0.125, 0.5, 0.01, 0.03125, 0.1)

DIGESTS = span_digests(
    {
        (W1, "MyProc", "thread-cpu", "seconds"): 3.0,
        (W2, "MyProc", "thread-cpu", "seconds"): 4.5,
        (W1, "MyProc", "thread-noncpu", "seconds"): 1.0,
        (W2, "MyProc", "thread-noncpu", "seconds"): 1.5,
        (W1, "MyProc", "executor", "seconds"): 0.25,
        (W1, "MyProc", "other", "seconds"): 0.125,
        (W1, "MyProc", "I/O", "seconds"): 0.5,
        (W1, "MyProc", "S3 reads", "bytes"): 1e6,
        (W1, "MyProc", "disk-read", "bytes"): 2048,
        (W1, "MyProc", "disk-read", "seconds"): 0.01,
        (W2, "MyProc", "disk-write", "bytes"): 512,
        (W2, "MyProc", "decompress", "seconds"): 0.03125,
        (W1, "MyProc", "serialize", "seconds"): 0.1,
        (W1, "MyProc", "memory-read", "bytes"): 4096,
        (W1, "MyProc", "memory-read", "count"): 3,
        (W1, "reduce", "thread-cpu", "seconds"): 0.75,
        (W1, "reduce", "thread-noncpu", "seconds"): 0.25,
        (W1, "reduce", "compress", "seconds"): 0.0625,
        (W1, "reduce", "compress", "count"): 7,
        (W2, "reduce", "deserialize", "seconds"): 0.2,
        (W2, "reduce", "disk-read", "bytes"): 1024,
    }
) | {
    (W2, "p2p", SPAN, "foreground", "thread-cpu", "seconds"): 0.5,
    # Not the split's: a wrong unit, a context without span (the scheduler has already
    # left out the rows of spans outside the collector's).
    (W1, "execute", SPAN, "MyProc", "thread-cpu", "count"): 99,
    (W1, "gather-dep", SPAN, "", "thread-cpu", "seconds"): 50.0,
}


def fine_metrics(**overrides):
    return processor_metrics(make_snapshot(digests=DIGESTS), **overrides)


def test_processor_and_overhead_split() -> None:
    m = fine_metrics()
    assert m["processor_prefixes"] == ["MyProc"]
    assert m["processor_prefix_source"] == "workers"
    assert m["processor_cpu_time_seconds"] == 7.5
    assert m["overhead_cpu_time_seconds"] == 0.75 + 0.5  # reduce and p2p
    assert m["total_cpu_time"] == 8.75
    assert m["processor_noncpu_time_seconds"] == 2.5
    assert m["overhead_noncpu_time_seconds"] == 0.25
    assert m["processor_cpu_percent"] == 75.0
    assert m["processor_noncpu_percent"] == 25.0
    assert close(m["processor_task_time_seconds"], math.fsum(PROCESSOR_SECONDS))


def test_sums_check_activity_and_unit() -> None:
    m = fine_metrics()
    assert m["disk_read_bytes"] == 2048 + 1024
    assert m["disk_write_bytes"] == 512
    assert m["compression_time_seconds"] == 0.0625
    assert m["decompression_time_seconds"] == 0.03125
    assert m["serialization_time_seconds"] == 0.1
    assert m["deserialization_time_seconds"] == 0.2
    assert m["total_compression_overhead_seconds"] == 0.0625 + 0.03125
    assert close(m["total_serialization_overhead_seconds"], 0.3)
    assert m["total_bytes_memory_read_dask"] == 4096


def test_aliases_of_0_1_2() -> None:
    m = MetricsDict(fine_metrics())
    assert not set(METRIC_ALIASES) & set(m)  # looked up, never stored
    assert m["processor_io_wait_time_seconds"] == m["processor_noncpu_time_seconds"]
    assert m["overhead_io_wait_time_seconds"] == m["overhead_noncpu_time_seconds"]
    assert m["processor_cpu_percentage"] == m["processor_cpu_percent"] == 75.0
    assert m.get("processor_noncpu_percentage") == m["processor_noncpu_percent"]
    assert "processor_io_wait_percent" in m and "processor_io_wait_percentage" not in m
    assert m["processor_io_wait_percent"] == m["processor_noncpu_percent"]
    assert m["total_bytes_memory_read"] == m["total_bytes_memory_read_dask"]


def test_raw_span_metrics_is_dasks_shape_summed_over_workers() -> None:
    raw = fine_metrics()["raw_span_metrics"]
    assert raw[("execute", "MyProc", "thread-cpu", "seconds")] == 7.5
    assert raw[("execute", "MyProc", "thread-cpu", "count")] == 99
    assert raw[("p2p", "foreground", "thread-cpu", "seconds")] == 0.5
    assert ("gather-dep", "", "thread-cpu", "seconds") not in raw
    assert len(raw) == len(DIGESTS) - 3  # gather-dep, and W1+W2 pairs merged
    assert math.fsum(raw.values()) == pytest.approx(
        math.fsum(v for k, v in DIGESTS.items() if k[1] != "gather-dep" and k[2] == SPAN)
    )


def test_per_worker_fine_metrics() -> None:
    per_worker = fine_metrics()["per_worker_fine_metrics"]
    assert set(per_worker) == {W1, W2}
    assert per_worker[W1][("execute", "MyProc", "thread-cpu", "seconds")] == 3.0
    assert per_worker[W2][("execute", "MyProc", "thread-cpu", "seconds")] == 4.5
    assert per_worker[W2][("p2p", "foreground", "thread-cpu", "seconds")] == 0.5


def test_descendant_spans_are_summed() -> None:
    digests = span_digests(
        {
            (W1, "MyProc", "thread-cpu", "seconds"): 1.0,
        }
    ) | {
        (W1, "execute", "child", "MyProc", "thread-cpu", "seconds"): 2.0,
    }
    m = fine_metrics(snapshot=make_snapshot(digests=digests))
    assert m["raw_span_metrics"] == {("execute", "MyProc", "thread-cpu", "seconds"): 3.0}
    assert m["processor_cpu_time_seconds"] == 3.0


def test_processor_plus_overhead_is_the_total_exactly() -> None:
    rng = random.Random(7)
    digests = {}
    for i in range(300):
        worker = f"tcp://w{i % 7}:1"
        prefix = rng.choice(["MyProc", "automatic_retries", "reduce", "scatter", "p"]) + str(i)
        context = rng.choice(["execute", "execute", "p2p"])
        digests[(worker, context, SPAN, prefix, "thread-cpu", "seconds")] = rng.random() * 10
    processors = {p for (_, _, _, p, _, _) in digests if p.startswith(("MyProc", "p"))}
    m = fine_metrics(snapshot=make_snapshot(digests=digests), processor_prefixes=processors)
    total = m["processor_cpu_time_seconds"] + m["overhead_cpu_time_seconds"]
    assert total == m["total_cpu_time"]
    assert close(m["total_cpu_time"], math.fsum(digests.values()))
    assert m["overhead_cpu_time_seconds"] > 0
    assert m["processor_cpu_time_seconds"] > 0


def test_prefix_precedence() -> None:
    chunks = [chunk(prefix="FromChunk")]
    m = fine_metrics(processor_prefixes={"reduce"}, chunks=chunks)
    assert (m["processor_prefixes"], m["processor_prefix_source"]) == (["reduce"], "override")
    assert m["processor_cpu_time_seconds"] == 0.75
    m = fine_metrics(chunks=chunks)
    assert (m["processor_prefixes"], m["processor_prefix_source"]) == (["MyProc"], "workers")
    m = fine_metrics(detected_prefixes=set(), chunks=[chunk(prefix="MyProc")])
    assert (m["processor_prefixes"], m["processor_prefix_source"]) == (["MyProc"], "chunks")
    assert m["processor_cpu_time_seconds"] == 7.5


def test_no_processor_prefix_leaves_the_split_unavailable() -> None:
    m = fine_metrics(detected_prefixes=set())
    assert m["processor_prefix_source"] == "none"
    assert m["processor_prefixes"] == []
    assert m["total_cpu_time"] == 8.75
    for key in ("processor_cpu_time_seconds", "overhead_cpu_time_seconds", "speedup_factor"):
        assert m[key] is None
        assert "no processor task prefix" in m["unavailable"][key]
    assert "processor_cpu_time_seconds" in m["unavailable"]["avg_cpu_time_per_chunk"]


def test_no_digests() -> None:
    m = metrics_of(detected_prefixes={"MyProc"})
    for key in ("total_cpu_time", "processor_cpu_time_seconds", "disk_read_bytes"):
        assert m[key] is None
        assert "no fine performance metrics" in m["unavailable"][key]
    assert m["unavailable"]["total_serialization_overhead_seconds"].startswith("no fine")
    assert m["raw_span_metrics"] == {}
    assert m["per_worker_fine_metrics"] == {}


def test_processor_without_thread_time_has_no_percentages() -> None:
    digests = span_digests({(W1, "reduce", "thread-cpu", "seconds"): 1.0})
    m = fine_metrics(snapshot=make_snapshot(digests=digests))
    assert m["processor_cpu_time_seconds"] == 0.0
    assert m["processor_cpu_percent"] is None
    assert "is 0" in m["unavailable"]["processor_cpu_percent"]


def test_per_prefix_and_per_worker_tables() -> None:
    tasks = [
        task_row(W1, "MyProc", tasks=3, compute_seconds=4.0, first_start=10.0, last_stop=20.0),
        task_row(
            W2, "MyProc", tasks=2, erred=1, compute_seconds=5.0, first_start=8.0, last_stop=19.0
        ),
        task_row(W1, "reduce", tasks=1, compute_seconds=1.0, output_bytes=64),
        task_row("", "MyProc", span="", transitions=50),
    ]
    m = fine_metrics(snapshot=make_snapshot(digests=DIGESTS, tasks=tasks))
    proc = m["per_prefix"]["MyProc"]
    assert (proc["tasks"], proc["erred"], proc["compute_seconds"]) == (5, 1, 9.0)
    assert (proc["first_start"], proc["last_stop"]) == (8.0, 20.0)
    assert proc["thread_cpu_seconds"] == 7.5
    assert proc["thread_noncpu_seconds"] == 2.5
    assert close(proc["task_seconds"], math.fsum(PROCESSOR_SECONDS))
    assert proc["processor"] is True
    reduce = m["per_prefix"]["reduce"]
    assert (reduce["tasks"], reduce["output_bytes"], reduce["processor"]) == (1, 64, False)
    assert reduce["first_start"] is None  # no finished task with a start time
    assert "foreground" not in m["per_prefix"]  # p2p rows are not task prefixes
    w1 = m["per_worker"][W1]
    assert (w1["tasks"], w1["compute_seconds"]) == (4, 5.0)
    assert w1["thread_cpu_seconds"] == 3.0 + 0.75
    assert m["per_worker"][W2]["thread_cpu_seconds"] == 4.5 + 0.5


def test_monitoring_self_report() -> None:
    snapshot = make_snapshot(
        digests=DIGESTS,
        counters=counters_report(hook_ns_per_call=float("nan"), dropped_events=3),
        errors={"sampler": 2},
        workers={W1: worker_info(gaps=2), W2: worker_info(gaps=1, restarts=1)},
    )
    monitoring = fine_metrics(snapshot=snapshot)["monitoring"]
    assert monitoring["hook_ns_per_call"] is None
    assert monitoring["dropped_events"] == 3
    assert monitoring["errors"] == {"sampler": 2}
    assert monitoring["payload_gaps"] == 3
    assert monitoring["worker_restarts"] == 1
    assert monitoring["payload_bytes"] == 4000
