"""The new plots, drawn from a real measured run: what is drawn equals the metrics."""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import measured_run
import numpy as np
import pytest
from distributed import Client, LocalCluster
from measured_run import Measured, measure

from roastcoffea import load_measurement
from roastcoffea.measurement import load_metadata
from roastcoffea.phase_vocabulary import is_phase_activity
from roastcoffea.plots.compare import plot_measurement_comparison, plot_scaling_study
from roastcoffea.plots.datasets import plot_dataset_runtimes
from roastcoffea.plots.fine import plot_fine_metrics_heatmap, plot_processor_overhead_breakdown
from roastcoffea.plots.timeline import PROCESSOR_COLOR, plot_prefix_timeline
from roastcoffea.units import format_time

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


pytestmark = pytest.mark.usefixtures("no_pyplot_figures")


def texts(ax: Any) -> list[str]:
    return [text.get_text() for text in ax.texts]


# ---- fine metrics heatmap ----------------------------------------------------


def expected_matrix(metrics: dict[str, Any], unit: str) -> dict[str, dict[str, float]]:
    """Dask's activities per worker; the phase clock's have their own figures."""
    sums: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for worker, entries in metrics["per_worker_fine_metrics"].items():
        for (_context, _prefix, activity, key_unit), value in entries.items():
            if key_unit == unit and not is_phase_activity(activity):
                sums[worker][activity] += value
    return sums


@pytest.mark.parametrize("unit", ["seconds", "bytes"])
def test_heatmap_cells_are_the_per_worker_sums(metrics: dict[str, Any], unit: str) -> None:
    expected = expected_matrix(metrics, unit)
    fig, ax = plot_fine_metrics_heatmap(metrics, unit=unit)
    array = np.asarray(ax.images[0].get_array())
    workers = [label.get_text() for label in ax.get_yticklabels()]
    activities = [label.get_text() for label in ax.get_xticklabels()]
    assert sorted(workers) == sorted(metrics["per_worker_fine_metrics"])
    assert set(activities) == {a for row in expected.values() for a in row}
    assert array.shape == (len(workers), len(activities))
    for i, worker in enumerate(workers):
        for j, activity in enumerate(activities):
            assert array[i, j] == pytest.approx(expected[worker].get(activity, 0.0), rel=1e-12)
    assert len(ax.texts) == array.size
    assert ax.images[0].get_clim() == (0, array.max())
    if unit == "seconds":
        assert texts(ax) == [format_time(v) for v in array.flat]
    assert ax.get_title() == "Fine Metrics per Worker"
    assert ax.get_xlabel() == f"activity ({unit})"
    colorbar_labels = [other.get_ylabel() for other in fig.axes if other is not ax]
    assert colorbar_labels == ["time (s)" if unit == "seconds" else "bytes (kiB)"]


def test_heatmap_worker_without_an_activity_has_a_zero_cell() -> None:
    per_worker = {
        "tcp://b:1": {
            ("execute", "p", "thread-cpu", "seconds"): 2.0,
            ("execute", "q", "thread-cpu", "seconds"): 1.5,
            ("get-data", "", "serialize", "seconds"): 0.25,
            ("execute", "p", "memory-read", "bytes"): 4096.0,
        },
        "tcp://a:1": {("execute", "p", "thread-cpu", "seconds"): 1.0},
    }
    _fig, ax = plot_fine_metrics_heatmap({"per_worker_fine_metrics": per_worker})
    assert [t.get_text() for t in ax.get_yticklabels()] == ["tcp://a:1", "tcp://b:1"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["thread-cpu", "serialize"]
    assert np.asarray(ax.images[0].get_array()).tolist() == [[1.0, 0.0], [3.5, 0.25]]
    _fig, ax = plot_fine_metrics_heatmap({"per_worker_fine_metrics": per_worker}, unit="bytes")
    assert np.asarray(ax.images[0].get_array()).tolist() == [[0.0], [4096.0]]
    assert texts(ax) == ["0 B", "4.00 kiB"]  # as the report writes bytes


def test_heatmap_missing_data_names_it() -> None:
    with pytest.raises(ValueError, match="per_worker_fine_metrics"):
        plot_fine_metrics_heatmap({"per_worker_fine_metrics": None})
    with pytest.raises(ValueError, match="per_worker_fine_metrics"):
        plot_fine_metrics_heatmap({})
    seconds_only = {"w": {("execute", "p", "thread-cpu", "seconds"): 1.0}}
    with pytest.raises(ValueError, match="'bytes'"):
        plot_fine_metrics_heatmap({"per_worker_fine_metrics": seconds_only}, unit="bytes")


# ---- processor vs overhead ---------------------------------------------------


def test_breakdown_bars_are_the_four_times(metrics: dict[str, Any]) -> None:
    proc_cpu = metrics["processor_cpu_time_seconds"]
    proc_noncpu = metrics["processor_noncpu_time_seconds"]
    over_cpu = metrics["overhead_cpu_time_seconds"]
    over_noncpu = metrics["overhead_noncpu_time_seconds"]
    total = proc_cpu + proc_noncpu + over_cpu + over_noncpu
    _fig, ax = plot_processor_overhead_breakdown(metrics)
    cpu, noncpu = ax.containers
    assert cpu.get_label() == "CPU" and noncpu.get_label() == "non-CPU"
    assert [p.get_height() for p in cpu] == pytest.approx([proc_cpu, over_cpu])
    assert [p.get_height() for p in noncpu] == pytest.approx([proc_noncpu, over_noncpu])
    assert [p.get_y() for p in noncpu] == pytest.approx([proc_cpu, over_cpu])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["processor", "overhead"]
    shown = texts(ax)
    processor = proc_cpu + proc_noncpu
    assert f"{format_time(processor)} ({100 * processor / total:.1f}%)" in shown
    assert f"{100 * proc_cpu / total:.1f}%" in shown
    assert ax.get_ylabel() == "thread time (s)"


def test_breakdown_missing_value_names_it_and_its_reason(metrics: dict[str, Any]) -> None:
    broken = dict(metrics)
    broken["overhead_cpu_time_seconds"] = None
    broken["unavailable"] = {"overhead_cpu_time_seconds": "no processor prefix"}
    with pytest.raises(ValueError, match=r"overhead_cpu_time_seconds.*no processor prefix"):
        plot_processor_overhead_breakdown(broken)


# ---- prefix timeline ---------------------------------------------------------


def test_prefix_timeline_bars_span_first_start_to_last_stop(metrics: dict[str, Any]) -> None:
    per_prefix = metrics["per_prefix"]
    order = sorted(per_prefix, key=lambda p: per_prefix[p]["first_start"])
    _fig, ax = plot_prefix_timeline(metrics)
    assert [t.get_text() for t in ax.get_yticklabels()] == order
    bars = ax.patches
    assert len(bars) == len(order)
    for bar, prefix in zip(bars, order, strict=True):
        row = per_prefix[prefix]
        origin = metrics["time_origin"]
        assert bar.get_x() == pytest.approx(row["first_start"] - origin, abs=1e-9)
        assert bar.get_width() == pytest.approx(row["last_stop"] - row["first_start"], abs=1e-9)
        is_processor = tuple(bar.get_facecolor()[:3]) == pytest.approx(
            tuple(int(PROCESSOR_COLOR[i : i + 2], 16) / 255 for i in (1, 3, 5))
        )
        assert is_processor == (prefix in metrics["processor_prefixes"])
    counts = texts(ax)
    for prefix in order:
        tasks = per_prefix[prefix]["tasks"]
        assert f"{tasks} task{'' if tasks == 1 else 's'}" in counts
    assert ax.get_xlabel() == "seconds since the block's start"
    assert ax.get_title() == "Task Prefix Timeline"


def test_prefix_timeline_leaves_out_prefixes_without_times() -> None:
    per_prefix = {
        "a": {"first_start": 100.0, "last_stop": 160.0, "tasks": 2, "processor": True},
        "b": {"first_start": None, "last_stop": None, "tasks": 0, "erred": 3},
    }
    _fig, ax = plot_prefix_timeline({"per_prefix": per_prefix})
    assert len(ax.patches) == 1
    assert ax.patches[0].get_width() == pytest.approx(60.0)
    assert ax.patches[0].get_x() == 0.0  # no time_origin: the first start
    assert any("1 prefix(es) without a finished task" in t for t in texts(ax))


def test_prefix_timeline_missing_data_names_it() -> None:
    with pytest.raises(ValueError, match="per_prefix"):
        plot_prefix_timeline({"per_prefix": {}})
    with pytest.raises(ValueError, match="first_start"):
        plot_prefix_timeline({"per_prefix": {"a": {"first_start": None, "last_stop": None}}})


# ---- dataset runtimes --------------------------------------------------------


def durations_by_dataset(records: list[dict[str, Any]]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = defaultdict(list)
    for record in records:
        if not record["error"]:
            out[record["dataset"]].append(record["duration"])
    return dict(sorted(out.items()))


def test_dataset_boxes_count_and_median_per_dataset(metrics: dict[str, Any]) -> None:
    records = metrics["raw_chunk_metrics"]
    expected = durations_by_dataset(records)
    assert set(expected) == {"dy", "dimuon", "ttbar"}
    _fig, ax = plot_dataset_runtimes(records)
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == [f"{name}\nn={len(values)}" for name, values in expected.items()]
    drawn = {line.get_gid(): line.get_ydata() for line in ax.lines if line.get_gid()}
    for name, values in expected.items():
        assert drawn[f"median:{name}"][0] == pytest.approx(float(np.median(values)))
        assert list(drawn[f"chunks:{name}"]) == pytest.approx(values)
    assert ax.get_ylabel() == "duration (s)"


def test_dataset_runtimes_leave_failed_chunks_out(metrics: dict[str, Any]) -> None:
    records = copy.deepcopy(metrics["raw_chunk_metrics"])
    failed = dict(records[0], error="OSError: file vanished", duration=99.0)
    _fig, ax = plot_dataset_runtimes([*records, failed])
    expected = durations_by_dataset(records)
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == [f"{name}\nn={len(values)}" for name, values in expected.items()]
    assert max(v for line in ax.lines for v in line.get_ydata()) < 99.0
    assert "1 failed chunk(s) left out" in texts(ax)


def test_dataset_runtimes_missing_data_names_it() -> None:
    with pytest.raises(ValueError, match="chunk records"):
        plot_dataset_runtimes([])
    with pytest.raises(ValueError, match="successful chunk"):
        plot_dataset_runtimes([{"dataset": "a", "duration": 1.0, "error": "KeyError: x"}])


# ---- comparison and scaling --------------------------------------------------


def container(axes: Any, label: str) -> list[float]:
    """Heights of the bars labelled ``label`` on any axes of the figure."""
    for ax in axes:
        for bars in ax.containers:
            if bars.get_label() == label:
                return [p.get_height() for p in bars]
    raise AssertionError(f"no bars labelled {label!r}")


@pytest.fixture
def three(measured: Measured) -> list[Any]:
    """The saved run (a directory), a derived dict with other values, a (metrics, metadata) pair."""
    loaded = load_measurement(measured.path)[0]
    other = copy.deepcopy(loaded)
    other["event_rate_wall_khz"] = None
    other["core_efficiency"] = loaded["core_efficiency"] / 2
    other["overall_rate_gbps"] = loaded["overall_rate_gbps"] * 3
    metadata = copy.deepcopy(load_metadata(measured.path))
    metadata["name"] = "four-threads"
    metadata["cluster"]["threads"] = 4
    return [measured.path, other, (measured.metrics, metadata)]


def test_comparison_bars_are_each_measurements_values(three: list[Any]) -> None:
    runs = [load_measurement(three[0])[0], three[1], three[2][0]]
    fig, axes = plot_measurement_comparison(three)
    assert len(axes) == 3
    assert [t.get_text() for t in axes[0].get_xticklabels()] == [
        Path(three[0]).name,
        "run 2",
        "four-threads",
    ]
    everything = fig.axes
    rates = container(everything, "event rate (kHz)")
    assert rates[0] == pytest.approx(runs[0]["event_rate_wall_khz"])
    assert np.isnan(rates[1])
    assert rates[2] == pytest.approx(runs[2]["event_rate_wall_khz"])
    assert "n/a" in texts(axes[0])
    gbps = [m["overall_rate_gbps"] for m in runs]
    assert container(everything, "throughput (Gbps)") == pytest.approx(gbps)
    efficiency = [100 * m["core_efficiency"] for m in runs]
    assert container(everything, "core efficiency (%)") == pytest.approx(efficiency)
    io_share = [m["io_overhead_percent"] for m in runs]
    assert container(everything, "processor time off CPU (%)") == pytest.approx(io_share)
    processor = [m["processor_cpu_time_seconds"] + m["processor_noncpu_time_seconds"] for m in runs]
    overhead = [m["overhead_cpu_time_seconds"] + m["overhead_noncpu_time_seconds"] for m in runs]
    assert container(everything, "processor (s)") == pytest.approx(processor)
    assert container(everything, "overhead (s)") == pytest.approx(overhead)
    assert axes[0].get_ylabel() == "event rate (kHz)"
    assert fig.get_suptitle() == "Measurement Comparison"


def test_comparison_labels_and_errors(three: list[Any]) -> None:
    _fig, axes = plot_measurement_comparison(three, labels=["a", "b", "c"])
    assert [t.get_text() for t in axes[2].get_xticklabels()] == ["a", "b", "c"]
    with pytest.raises(ValueError, match="2 labels for 3 measurements"):
        plot_measurement_comparison(three, labels=["a", "b"])
    with pytest.raises(ValueError, match="no measurements"):
        plot_measurement_comparison([])
    with pytest.raises(ValueError, match="event_rate_wall_khz"):
        plot_measurement_comparison([{"event_rate_wall_khz": None}, {}])
    with pytest.raises(TypeError, match="measurement 1"):
        plot_measurement_comparison([42])


def test_scaling_study_x_is_cores(three: list[Any]) -> None:
    loaded = load_measurement(three[0])[0]
    saved_threads = load_metadata(three[0])["cluster"]["threads"]
    other = dict(three[1], total_cores=1.0)
    _fig, axes = plot_scaling_study([three[0], other, three[2]])
    (rate_line,) = [line for line in axes[0].lines if line.get_label() == "event rate (kHz)"]
    # The derived dict has no event rate: left out of the rate panel and noted.
    assert list(rate_line.get_xdata()) == [saved_threads, 4]
    assert list(rate_line.get_ydata()) == pytest.approx([loaded["event_rate_wall_khz"]] * 2)
    assert "not measured: run 2" in axes[0].get_xlabel()
    (ideal,) = [line for line in axes[0].lines if line.get_label() == "ideal (linear)"]
    assert list(ideal.get_ydata()) == pytest.approx(
        [loaded["event_rate_wall_khz"], loaded["event_rate_wall_khz"] * 4 / saved_threads]
    )
    (eff_line,) = [line for line in axes[1].lines if line.get_label() == "core efficiency (%)"]
    assert list(eff_line.get_xdata()) == [1.0, saved_threads, 4]
    # In core order: the derived dict (1, half the efficiency), the saved run, the pair.
    assert list(eff_line.get_ydata()) == pytest.approx(
        [
            50 * loaded["core_efficiency"],
            100 * loaded["core_efficiency"],
            100 * three[2][0]["core_efficiency"],
        ]
    )
    assert axes[1].get_xlabel() == "cores (threads)"


def test_scaling_study_on_two_real_cluster_shapes(
    measured: Measured,
    make_cluster: Callable[..., tuple[LocalCluster, Client]],
    cms_data: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One dataset (4 chunks) keeps the second real run short.
    monkeypatch.setattr(measured_run, "DATASETS", {"dy": measured_run.DATASETS["dy"]})
    _, one_worker = make_cluster(n_workers=1)
    small = measure(one_worker, cms_data, tmp_path)
    assert small.metrics["num_chunks"] == 4
    paths = [small.path, measured.path]
    threads = [load_metadata(p)["cluster"]["threads"] for p in paths]
    assert threads == [1, 2]
    rates = [load_measurement(p)[0]["event_rate_wall_khz"] for p in paths]
    efficiency = [100 * load_measurement(p)[0]["core_efficiency"] for p in paths]
    _fig, axes = plot_scaling_study(paths, labels=["1 worker", "2 workers"])
    (rate_line,) = [line for line in axes[0].lines if line.get_label() == "event rate (kHz)"]
    assert list(rate_line.get_xdata()) == threads
    assert list(rate_line.get_ydata()) == pytest.approx(rates)
    (eff_line,) = [line for line in axes[1].lines if line.get_label() == "core efficiency (%)"]
    assert list(eff_line.get_ydata()) == pytest.approx(efficiency)
    assert {t.get_text() for t in axes[0].texts} == {"1 worker", "2 workers"}


def test_scaling_study_without_cores_names_it() -> None:
    with pytest.raises(ValueError, match="cores"):
        plot_scaling_study([{"event_rate_wall_khz": 1.0, "total_cores": None}])


# ---- saving ------------------------------------------------------------------


def test_every_new_plot_writes_a_png(measured: Measured, three: list[Any], tmp_path: Path) -> None:
    metrics = measured.metrics
    draws = {
        "heatmap": lambda out: plot_fine_metrics_heatmap(metrics, output_path=out),
        "breakdown": lambda out: plot_processor_overhead_breakdown(metrics, output_path=out),
        "timeline": lambda out: plot_prefix_timeline(metrics, output_path=out),
        "datasets": lambda out: plot_dataset_runtimes(
            metrics["raw_chunk_metrics"], output_path=out
        ),
        "comparison": lambda out: plot_measurement_comparison(three, output_path=out),
        "scaling": lambda out: plot_scaling_study(three, output_path=out),
    }
    for name, draw in draws.items():
        out = tmp_path / f"{name}.png"
        draw(out)
        assert out.read_bytes()[:8] == PNG_MAGIC, name
