"""The schema of saved measurements knows every documented metric and fits what is produced."""

from __future__ import annotations

import math

import pytest
from test_metrics_docs import documented_keys
from test_metrics_support import chunk, metrics_of

from roastcoffea import DecodeError
from roastcoffea.formats.schema import METRICS, check_metrics


def test_every_documented_metric_has_a_shape() -> None:
    assert documented_keys() - set(METRICS) == set()


def test_what_compute_metrics_makes_fits_the_schema() -> None:
    failed = chunk(error="OSError: gone", num_events=None, duration=None)
    for metrics in (
        metrics_of(chunks=[chunk()], custom_metrics={"dy": {"entries": 1}}),
        metrics_of(chunks=[chunk(), failed]),
        metrics_of(chunks=[]),
    ):
        check_metrics(metrics, "produced")


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("num_chunks", -1, r"metrics\['num_chunks'\]: expected a whole number >= 0"),
        ("wall_time", math.inf, r"metrics\['wall_time'\]: expected a finite number"),
        (
            "per_dataset",
            {"dy": {"total_events": "x"}},
            r"\['dy'\]\['total_events'\]: expected a number",
        ),
        ("raw_span_metrics", {("a", "b"): 1.0}, r"\(a key\): expected a span metric key"),
    ],
)
def test_a_value_out_of_shape_is_named_by_its_place(key: str, value: object, message: str) -> None:
    with pytest.raises(DecodeError, match=message):
        check_metrics(
            {"wall_time": 1.0, key: value} if key != "x" * 100 else {key: "y" * (2 << 20)}, "f"
        )
