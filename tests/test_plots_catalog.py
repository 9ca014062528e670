"""The plot catalog: which plots a metrics dictionary can draw, and saving them all."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pytest
from matplotlib.figure import Figure
from measured_run import Measured

from roastcoffea import load_measurement
from roastcoffea.plots.catalog import PLOT_NAMES, PlotEntry, applicable_plots, save_plots

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

#: Plots drawn from tracking_data alone.
TRACKING_PLOTS = {
    "worker_count",
    "memory_utilization_mean",
    "memory_utilization_per_worker",
    "cpu_utilization_mean",
    "cpu_utilization_per_worker",
    "occupancy",
    "executing_tasks",
    "worker_activity",
    "total_active_tasks",
}
#: Plots drawn from the processor phases.
PHASE_PLOTS = {"phase_timeline", "phase_shares_per_dataset", "phase_heatmap"}
#: Plots drawn from the chunk records.
CHUNK_PLOTS = {
    "runtime_distribution",
    "runtime_vs_events",
    "dataset_runtimes",
    "branch_access_per_chunk",
    "bytes_accessed_per_chunk",
}


pytestmark = pytest.mark.usefixtures("no_pyplot_figures")


def figure_titles(fig: Figure) -> set[str]:
    titles = {ax.get_title() for ax in fig.axes}
    return titles | {fig.get_suptitle()}


def test_catalog_has_the_21_legacy_plots_and_10_new_ones() -> None:
    assert len(PLOT_NAMES) == len(set(PLOT_NAMES)) == 31
    new = {
        "wall_split",
        "profile_icicle",
        "prefix_timeline",
        "dataset_runtimes",
        "processor_overhead_breakdown",
        "fine_metrics_heatmap",
        "fine_metrics_bytes_heatmap",
        *PHASE_PLOTS,
    }
    assert new <= set(PLOT_NAMES)
    assert set(PLOT_NAMES) >= TRACKING_PLOTS | CHUNK_PLOTS


def test_every_applicable_plot_of_the_measured_run_draws(metrics: dict[str, Any]) -> None:
    entries = applicable_plots(metrics)
    names = [entry.name for entry in entries]
    assert names == [name for name in PLOT_NAMES if name in names]
    # The run has worker tracking, chunk records, I/O, fine metrics and prefixes.
    expected = TRACKING_PLOTS | CHUNK_PLOTS
    expected |= {"throughput", "prefix_timeline", "processor_overhead_breakdown"}
    expected |= {"compression_ratio_distribution", "data_access_percentage"}
    expected |= {"fine_metrics_heatmap", "per_task_cpu_io"}
    expected |= {"efficiency_summary", "resource_utilization"}
    expected |= PHASE_PLOTS
    assert expected <= set(names)
    span = metrics["raw_span_metrics"]
    spilled = any(k[2] == "disk-read" and k[3] == "bytes" for k in span)
    assert ("per_task_bytes_read" in names) == spilled
    overhead = {"compress", "decompress", "serialize", "deserialize"}
    assert ("per_task_overhead" in names) == any(
        k[2] in overhead and k[3] == "seconds" for k in span
    )
    for entry in entries:
        assert isinstance(entry, PlotEntry)
        fig, ax = entry.draw(metrics)
        assert isinstance(fig, Figure), entry.name
        assert ax is not None
        assert entry.title in figure_titles(fig), entry.name


def test_without_tracking_data_the_timelines_are_left_out(metrics: dict[str, Any]) -> None:
    untracked = dict(metrics, tracking_data=None)
    names = {entry.name for entry in applicable_plots(untracked)}
    assert not names & TRACKING_PLOTS
    assert CHUNK_PLOTS | {"throughput", "prefix_timeline"} <= names
    throughput = next(e for e in applicable_plots(untracked) if e.name == "throughput")
    fig, _ax = throughput.draw(untracked)
    assert len(fig.axes) == 1  # no worker-count twin axis without tracking data


def test_plots_need_their_own_data(measured: Measured) -> None:
    assert applicable_plots({}) == []
    metrics = copy.deepcopy(measured.metrics)
    for record in metrics["raw_chunk_metrics"]:
        record["error"] = "OSError: gone"
    for key in ("chunk_info", "compression_ratios", "bytes_read_percent_per_file"):
        metrics[key] = None
    metrics["processor_cpu_time_seconds"] = None
    metrics["per_worker_fine_metrics"] = {
        w: {k: v for k, v in row.items() if k[3] != "bytes"}
        for w, row in metrics["per_worker_fine_metrics"].items()
    }
    metrics["tracking_data"]["worker_cpu"] = {
        w: [(t, None) for t, _ in points]
        for w, points in metrics["tracking_data"]["worker_cpu"].items()
    }
    metrics["tracking_data"]["worker_memory_limit"] = {
        w: [(t, 0.0) for t, _ in points]
        for w, points in metrics["tracking_data"]["worker_memory_limit"].items()
    }
    names = {entry.name for entry in applicable_plots(metrics)}
    gone = {
        "runtime_distribution",
        "runtime_vs_events",
        "dataset_runtimes",
        "throughput",
        "compression_ratio_distribution",
        "data_access_percentage",
        "processor_overhead_breakdown",
        "fine_metrics_bytes_heatmap",
        "cpu_utilization_mean",
        "cpu_utilization_per_worker",
        "memory_utilization_mean",
        "memory_utilization_per_worker",
    }
    assert not names & gone
    # Failed chunks still read their branches and bytes.
    assert {"branch_access_per_chunk", "bytes_accessed_per_chunk", "worker_count"} <= names
    for entry in applicable_plots(metrics):
        entry.draw(metrics)


def test_times_the_timelines_cannot_place_leave_them_out() -> None:
    """roastcoffea 0.1.2 measurements load with ISO-string times and string keys."""
    legacy = {
        "tracking_data": {
            "worker_counts": {"2024-01-01T00:00:00": 2},
            "worker_cpu": {"tcp://w:1": [["2024-01-01T00:00:00", 50.0]]},
        },
        "raw_span_metrics": {"('execute', 'p', 'thread-cpu', 'seconds')": 1.0},
    }
    assert applicable_plots(legacy) == []


def test_save_plots_writes_one_png_per_applicable_plot(measured: Measured, tmp_path: Path) -> None:
    loaded = load_measurement(measured.path)[0]
    out = tmp_path / "figures"
    written = save_plots(loaded, out)
    names = [entry.name for entry in applicable_plots(loaded)]
    assert written == [out / f"{name}.png" for name in names]
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{n}.png" for n in names)
    for path in written:
        data = path.read_bytes()
        assert data[:8] == PNG_MAGIC, path.name
        image = plt.imread(path)
        assert image.shape[0] > 100 and (image[..., :3] < 0.5).mean() > 0.001, path.name


def test_save_plots_other_format_and_bad_format(measured: Measured, tmp_path: Path) -> None:
    metrics = {"per_prefix": measured.metrics["per_prefix"]}
    (svg,) = save_plots(metrics, tmp_path, fmt="svg")
    assert svg == tmp_path / "prefix_timeline.svg"
    assert svg.read_text().lstrip().startswith("<?xml")
    with pytest.raises(ValueError, match="'bmpx'"):
        save_plots(metrics, tmp_path, fmt="bmpx")
