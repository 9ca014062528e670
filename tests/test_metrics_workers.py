"""Worker metrics and tracking_data from the sampler's series, against hand-computed answers."""

from __future__ import annotations

import datetime as dt
import math

from test_metrics_support import (
    T0,
    W1,
    W2,
    bucket,
    close,
    make_series,
    make_snapshot,
    metrics_of,
    point,
    worker_info,
)

from roastcoffea.metrics.workers import TRACKING_COLUMNS, WORKER_KEYS


def worker_metrics(series, **overrides):
    return metrics_of(snapshot=make_snapshot(series=series), **overrides)


def utc(t: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(t, tz=dt.timezone.utc)


def test_steady_cluster() -> None:
    series = {
        W1: make_series([point(T0 + i, nthreads=2, memory=1000.0 * (i + 1)) for i in range(11)]),
        W2: make_series([point(T0 + i, nthreads=2, memory=500.0) for i in range(11)]),
    }
    m = worker_metrics(series)
    assert m["avg_workers"] == 2.0
    assert m["peak_workers"] == 2
    assert m["total_cores"] == 4.0
    assert m["cores_per_worker"] == 2.0
    assert m["peak_memory_bytes"] == 11000.0 + 500.0
    assert m["peak_memory_per_worker_bytes"] == {W1: 11000.0, W2: 500.0}
    # W1 rises linearly 1000 -> 11000 (mean 6000), W2 stays at 500: (6000 + 500) / 2.
    assert close(m["avg_memory_per_worker_bytes"], 3250.0)


def test_a_worker_joining_is_time_weighted_with_trapezoids() -> None:
    series = {
        W1: make_series([point(T0 + i, nthreads=2) for i in range(11)]),
        W2: make_series([point(T0 + i, nthreads=2) for i in range(5, 11)]),
    }
    m = worker_metrics(series)
    # count 1 on [0, 4], ramps 1 -> 2 on [4, 5], 2 on [5, 10]: (4 + 1.5 + 10) / 10.
    assert close(m["avg_workers"], 1.55)
    assert m["peak_workers"] == 2
    assert close(m["total_cores"], 3.1)
    assert close(m["cores_per_worker"], 2.0)


def test_replaced_worker_is_not_counted_twice() -> None:
    """0.1.2 summed the threads of every worker ever seen: 8 here, for 4 live cores."""
    series = {
        W1: make_series([point(T0 + i, nthreads=4) for i in range(5)]),
        W2: make_series([point(T0 + i, nthreads=4) for i in range(6, 11)]),
    }
    workers = {W1: worker_info(removed=T0 + 4.5), W2: worker_info()}
    m = metrics_of(snapshot=make_snapshot(series=series, workers=workers))
    assert m["avg_workers"] == 1.0
    assert m["peak_workers"] == 1
    assert m["total_cores"] == 4.0
    assert m["workers_removed"] == {W1: T0 + 4.5}


def test_workers_removed_outside_the_window_are_not_reported() -> None:
    workers = {W1: worker_info(removed=T0 - 1), W2: worker_info(removed=T0 + 11)}
    m = metrics_of(snapshot=make_snapshot(workers=workers))
    assert m["workers_removed"] == {}


def test_points_outside_the_window_are_ignored() -> None:
    points = [point(T0 + i, memory=10.0**9 if i < 0 or i > 10 else 100.0) for i in range(-5, 16)]
    m = worker_metrics({W1: make_series(points)})
    assert m["peak_memory_bytes"] == 100.0
    assert m["peak_memory_per_worker_bytes"] == {W1: 100.0}
    counts = m["tracking_data"]["worker_counts"]
    assert sorted(counts) == [utc(T0 + i) for i in range(11)]


def test_buckets_peak_uses_their_max_and_tracking_their_mean() -> None:
    w1 = [
        bucket(T0 - 4, T0 + 2, 7, memory=(200.0, 100.0, 400.0)),
        *[point(T0 + i, memory=150.0) for i in range(3, 11)],
    ]
    w2 = [point(T0 + i, memory=100.0) for i in range(11)]
    m = worker_metrics({W1: make_series(w1), W2: make_series(w2)})
    assert m["peak_memory_bytes"] == 400.0 + 100.0
    assert m["peak_memory_per_worker_bytes"] == {W1: 400.0, W2: 100.0}
    assert m["avg_workers"] == 2.0
    # The bucket (clipped to T0) holds its mean 200 until T0 + 2, then W1 ramps to 150 at T0 + 3.
    w1_integral = 2 * 200.0 + (200.0 + 150.0) / 2 + 7 * 150.0
    assert close(m["avg_memory_per_worker_bytes"], (w1_integral + 1000.0) / 20.0)
    tracking = m["tracking_data"]
    assert tracking["worker_memory"][W1][0] == (utc(T0 - 1), 200.0)  # the bucket's middle
    assert tracking["resolution"][W1][:2] == [(utc(T0 - 1), 7), (utc(T0 + 3), 1)]
    assert tracking["resolution"][W2][0] == (utc(T0), 1)


def test_unreported_values_hold_the_previous_one() -> None:
    memory = [100.0, 200.0, math.nan, 300.0]
    series = {W1: make_series([point(T0 + i, memory=v) for i, v in enumerate(memory)])}
    m = worker_metrics(series)
    assert m["peak_memory_per_worker_bytes"] == {W1: 300.0}
    # held values 100, 200, 200, 300 on instants 0..3
    assert close(m["avg_memory_per_worker_bytes"], (150.0 + 200.0 + 250.0) / 3)
    assert m["tracking_data"]["worker_memory"][W1][2] == (utc(T0 + 2), None)


def test_a_single_instant() -> None:
    series = {
        W1: make_series([point(T0 + 5, nthreads=3, memory=10.0)]),
        W2: make_series([point(T0 + 5, nthreads=3, memory=30.0)]),
    }
    m = worker_metrics(series)
    assert (m["avg_workers"], m["peak_workers"], m["total_cores"]) == (2.0, 2, 6.0)
    assert m["avg_memory_per_worker_bytes"] == 20.0
    assert m["peak_memory_bytes"] == 40.0


def test_tracking_data_shape() -> None:
    series = {W1: make_series([point(T0 + i, nthreads=2, cpu=50.0 + i) for i in range(3)])}
    tracking = worker_metrics(series)["tracking_data"]
    assert set(tracking) == {"worker_counts", "resolution", *TRACKING_COLUMNS}
    assert tracking["worker_counts"] == {utc(T0): 1, utc(T0 + 1): 1, utc(T0 + 2): 1}
    assert all(t.tzinfo is dt.timezone.utc for t in tracking["worker_counts"])
    assert tracking["worker_cpu"][W1] == [(utc(T0 + i), 50.0 + i) for i in range(3)]
    assert tracking["worker_cores"][W1][0] == (utc(T0), 2.0)
    assert tracking["worker_spilled"][W1][0] == (utc(T0), 0.0)


def test_tracking_off() -> None:
    series = {W1: make_series([point(T0 + i) for i in range(3)])}
    m = worker_metrics(series, track_workers=False)
    for key in (*WORKER_KEYS, "tracking_data"):
        assert m[key] is None
        assert "track_workers=False" in m["unavailable"][key]


def test_no_sample_in_the_window() -> None:
    series = {W1: make_series([point(T0 - 5), point(T0 + 20)])}
    m = worker_metrics(series)
    for key in WORKER_KEYS:
        assert m[key] is None
        assert m["unavailable"][key] == "no worker sample in the collector's time window"
    assert m["tracking_data"]["worker_counts"] == {}
    assert m["tracking_data"]["worker_memory"] == {}


def test_memory_never_reported() -> None:
    series = {W1: make_series([point(T0 + i, memory=math.nan) for i in range(3)])}
    m = worker_metrics(series)
    assert m["avg_workers"] == 1.0
    for key in ("peak_memory_bytes", "peak_memory_per_worker_bytes", "avg_memory_per_worker_bytes"):
        assert m[key] is None
        assert m["unavailable"][key] == "no worker reported its memory"
