"""A run's rate series keeps its whole history in bounded memory and its events exactly."""

from __future__ import annotations

import random

from roastcoffea.plugin.scheduler.rate_series import FIRST_WIDTH, MAX_POINTS, RateSeries


def test_buckets_are_seconds_from_the_first_chunk() -> None:
    series = RateSeries()
    for at, events in ((100.0, 10), (100.5, 5), (102.2, 7)):
        series.add(at, events)
    assert series.as_dict() == {"start": 100.0, "width": FIRST_WIDTH, "events": [15, 0, 7]}


def test_a_long_run_keeps_its_events_in_bounded_buckets() -> None:
    series, rng, total = RateSeries(), random.Random(1), 0
    for i in range(20000):  # about 5.5 hours of chunks, one a second
        events = rng.randrange(1000)
        series.add(1000.0 + i, events)
        total += events
        assert len(series.events) <= MAX_POINTS
    assert sum(series.events) == total
    assert series.width == FIRST_WIDTH * 2**8  # 20,000 s in at most 120 buckets
    assert (len(series.events) - 1) * series.width <= 20000 < len(series.events) * series.width


def test_a_record_stamped_before_the_first_counts_in_the_first_bucket() -> None:
    series = RateSeries()
    series.add(50.0, 3)
    series.add(49.0, 4)  # clocks of two scheduler threads: never a negative index
    assert series.events == [7]
