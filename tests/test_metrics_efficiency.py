"""Efficiency ratios: core efficiency, speedup, I/O share and the per-core event rate."""

from __future__ import annotations

from test_metrics_support import (
    T0,
    W1,
    W2,
    close,
    make_series,
    make_snapshot,
    point,
    processor_metrics,
    span_digests,
)

#: Processor task time 5 + 2 + 1 = 8 s; thread-cpu 5 + 2 (reduce) = 7 s; noncpu 2 s.
DIGESTS = span_digests(
    {
        (W1, "MyProc", "thread-cpu", "seconds"): 5.0,
        (W1, "MyProc", "thread-noncpu", "seconds"): 2.0,
        (W2, "MyProc", "other", "seconds"): 1.0,
        (W2, "reduce", "thread-cpu", "seconds"): 2.0,
    }
)

#: Two workers of 2 threads each over the whole 10 s window: 4 cores.
SERIES = {w: make_series([point(T0 + i, nthreads=2) for i in range(11)]) for w in (W1, W2)}


def efficiency(**overrides):
    report = {"entries": 2_000_000, "bytesread": 10**9}
    snapshot = make_snapshot(digests=DIGESTS, series=SERIES)
    return processor_metrics(snapshot, **{"coffea_report": report, **overrides})


def test_ratios() -> None:
    m = efficiency()
    assert m["total_cores"] == 4.0
    assert close(m["core_efficiency"], 7.0 / (4.0 * 10.0))
    assert close(m["speedup_factor"], 8.0 / 10.0)
    assert close(m["io_overhead_percent"], 100.0 * 2.0 / (5.0 + 2.0))
    assert close(m["event_rate_core_hz"], 2_000_000 / (10.0 * 4.0))
    assert close(m["event_rate_core_khz"], m["event_rate_core_hz"] / 1e3)


def test_without_worker_tracking() -> None:
    m = efficiency(track_workers=False)
    for key in ("core_efficiency", "event_rate_core_hz", "event_rate_core_khz"):
        assert m[key] is None
        assert "total_cores" in m["unavailable"][key]
        assert "track_workers=False" in m["unavailable"][key]
    assert close(m["speedup_factor"], 0.8)  # needs no worker data


def test_io_overhead_needs_processor_thread_time() -> None:
    digests = span_digests({(W1, "MyProc", "other", "seconds"): 1.0})
    m = efficiency(snapshot=make_snapshot(digests=digests, series=SERIES))
    assert m["io_overhead_percent"] is None
    assert m["unavailable"]["io_overhead_percent"] == "processor thread time is 0"
    assert m["speedup_factor"] == 0.1
