"""The shared measured run is what the plot, report and command tests need."""

from __future__ import annotations

from measured_run import CHUNKSIZE, DATASETS, Measured

from roastcoffea import load_measurement


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
