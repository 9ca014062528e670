"""The 21 plots of roastcoffea 0.1.2, drawn from a real measurement (live and loaded).

Every expected value is computed here from the metrics dictionary, independently
of the plot code, and compared with what the figure holds.
"""

from __future__ import annotations

import datetime as dt
import inspect
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from legacy_plots import LEGACY
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from measured_run import Measured

from roastcoffea import plots
from roastcoffea.plots import chunks, cpu, io, memory, per_task, scaling, throughput, workers
from roastcoffea.plots._series import ZOOM_BELOW_PERCENT, histogram_bins
from roastcoffea.units import byte_unit

UTC = dt.timezone.utc
MODULES = ("workers", "memory", "cpu", "throughput", "chunks", "io", "per_task", "scaling")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


pytestmark = pytest.mark.usefixtures("no_pyplot_figures")


def param_id(value: Any) -> str:
    """Test ids: a function's name, else a short repr."""
    return getattr(value, "__name__", repr(value)[:24])


def reported(points: list[tuple[Any, Any]]) -> tuple[list[dt.datetime], list[float]]:
    """The (time, value) points whose value is not None."""
    kept = [(t, float(v)) for t, v in points if v is not None]
    return [t for t, _ in kept], [v for _, v in kept]


def since(times: Any, origin: float) -> list[float]:
    """Datetimes as the timelines draw them: seconds since ``origin`` (epoch s)."""
    return [t.timestamp() - origin for t in times]


def lines_by_label(ax: Axes) -> dict[str, Any]:
    """The axes' lines keyed by label."""
    return {line.get_label(): line for line in ax.get_lines()}


def per_instant(per_worker: dict[str, list[tuple[Any, Any]]]) -> dict[dt.datetime, list[float]]:
    """Values of all workers grouped by sample time."""
    grouped: dict[dt.datetime, list[float]] = defaultdict(list)
    for points in per_worker.values():
        for t, v in points:
            if v is not None:
                grouped[t].append(float(v))
    return dict(sorted(grouped.items()))


def memory_percent(tracking: dict[str, Any]) -> dict[str, list[tuple[dt.datetime, float]]]:
    """Per worker, memory / limit in percent at each sample with both."""
    out = {}
    for worker, points in tracking["worker_memory"].items():
        limits = dict(tracking["worker_memory_limit"][worker])
        out[worker] = [
            (t, 100 * v / limits[t]) for t, v in points if v is not None and limits.get(t)
        ]
    return out


def bar_heights(ax: Axes) -> dict[str, list[float]]:
    """Heights of the bars of each labelled bar container."""
    return {c.get_label(): [p.get_height() for p in c] for c in ax.containers}


def texts(ax: Axes) -> str:
    """All free text written on the axes."""
    return " ".join(t.get_text().replace("\n", " ") for t in ax.texts)


# -- signatures and docstrings ---------------------------------------------------------------


#: The 21 functions of 0.1.2, by object: (first argument, other parameters with defaults).
SIGNATURES: dict[Callable[..., Any], tuple[str, dict[str, Any]]] = {
    getattr(plots, name): signature for name, signature in LEGACY.items()
}


def test_there_are_21_plots() -> None:
    assert len(SIGNATURES) == 21


@pytest.mark.parametrize("plot", SIGNATURES, ids=lambda f: f.__name__)
def test_signature_is_that_of_0_1_2(plot: Callable[..., Any]) -> None:
    first, defaults = SIGNATURES[plot]
    parameters = list(inspect.signature(plot).parameters.values())
    # 0.1.2's parameters in its order; what is new comes after them, by keyword only.
    added = [p for p in parameters if p.kind is p.KEYWORD_ONLY and p.name not in defaults]
    parameters = [p for p in parameters if p not in added]
    assert parameters[0].name == first
    assert parameters[0].default is inspect.Parameter.empty
    assert {p.name: p.default for p in parameters[1:]} == defaults
    assert [p.name for p in parameters[1:]] == list(defaults)
    assert all(p.kind is p.KEYWORD_ONLY and p.default is not p.empty for p in added), added


@pytest.mark.parametrize("plot", SIGNATURES, ids=lambda f: f.__name__)
def test_docstring_is_numpydoc_with_unit_and_key(plot: Callable[..., Any]) -> None:
    doc = inspect.getdoc(plot) or ""
    for section in ("Parameters\n----------", "Returns\n-------", "Raises\n------"):
        assert section in doc
    assert "Unit: " in doc or "Units: " in doc
    assert "metrics" in doc  # names the metrics key it reads


def test_package_never_imports_pyplot() -> None:
    plots = Path(chunks.__file__).parent
    for name in ("_series", *MODULES):
        assert "pyplot" not in (plots / f"{name}.py").read_text(), name


# -- every plot on the real run: returns (fig, ax), saves a PNG ---------------------------------


def draw_all(metrics: dict[str, Any]) -> dict[str, Callable[[Any], tuple[Figure, Any]]]:
    """Each plot whose data the measured run has, as a call taking output_path."""
    tracking = metrics["tracking_data"]
    records = metrics["raw_chunk_metrics"]
    inputs: dict[Callable[..., Any], Any] = {
        chunks.plot_runtime_distribution: records,
        chunks.plot_runtime_vs_events: records,
        io.plot_branch_access_per_chunk: records,
        io.plot_bytes_accessed_per_chunk: records,
        io.plot_compression_ratio_distribution: metrics,
        io.plot_data_access_percentage: metrics,
        scaling.plot_efficiency_summary: metrics,
        scaling.plot_resource_utilization: metrics,
        per_task.plot_per_task_cpu_io: metrics["raw_span_metrics"],
    }
    for plot, (first, _) in SIGNATURES.items():
        if first == "tracking_data":
            inputs[plot] = tracking
    calls = {
        plot.__name__: (lambda path, plot=plot, arg=arg: plot(arg, output_path=path))
        for plot, arg in inputs.items()
    }
    calls["plot_throughput_timeline"] = lambda path: throughput.plot_throughput_timeline(
        metrics["chunk_info"], tracking, output_path=path
    )
    return calls


def test_every_plot_with_data_returns_its_figure_and_axes(metrics: dict[str, Any]) -> None:
    calls = draw_all(metrics)
    assert len(calls) == 19  # bytes read and overhead: the run never spilled (tested below)
    for name, call in calls.items():
        fig, ax = call(None)
        assert isinstance(fig, Figure), name
        main = ax.flat[0] if isinstance(ax, np.ndarray) else ax
        assert isinstance(main, Axes) and main.figure is fig, name
        assert main.get_title() or fig.get_suptitle(), name


def test_every_plot_saves_a_png(measured: Measured, tmp_path: Path) -> None:
    for name, call in draw_all(measured.metrics).items():
        path = tmp_path / f"{name}.png"
        call(path)
        assert path.read_bytes()[:8] == PNG_MAGIC, name
    path = tmp_path / "overhead.png"
    per_task.plot_per_task_overhead(SPILLED, output_path=path)
    assert path.read_bytes()[:8] == PNG_MAGIC


# -- worker timelines -------------------------------------------------------------------------

PER_WORKER = [
    (cpu.plot_occupancy_timeline, "worker_occupancy", "occupancy (s)"),
    (cpu.plot_executing_tasks_timeline, "worker_executing", "executing (tasks)"),
    (cpu.plot_cpu_utilization_per_worker_timeline, "worker_cpu", "CPU (% of one core)"),
    (
        throughput.plot_worker_activity_timeline,
        "worker_active_tasks",
        "tasks assigned (executing or waiting)",
    ),
]


@pytest.mark.parametrize(("plot", "key", "ylabel"), PER_WORKER, ids=param_id)
def test_per_worker_timeline_draws_one_line_per_worker(
    metrics: dict[str, Any], plot: Callable[..., Any], key: str, ylabel: str
) -> None:
    series = metrics["tracking_data"][key]
    origin = metrics["time_origin"]
    _, ax = plot(metrics["tracking_data"], origin=origin)
    lines = lines_by_label(ax)
    assert set(lines) == set(series) and len(series) == 2
    for worker, points in series.items():
        times, values = reported(points)
        np.testing.assert_allclose(lines[worker].get_xdata(), since(times, origin), atol=1e-6)
        np.testing.assert_allclose(lines[worker].get_ydata(), values)
    assert ax.get_ylabel() == ylabel
    assert ax.get_xlabel() == "seconds since the block's start"
    assert ax.get_title() == SIGNATURES[plot][1]["title"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == sorted(series)


def test_cpu_axis_is_not_clamped_at_100(metrics: dict[str, Any]) -> None:
    tracking = metrics["tracking_data"]
    peak = max(v for points in tracking["worker_cpu"].values() for _, v in points if v)
    _, ax = cpu.plot_cpu_utilization_per_worker_timeline(tracking)
    assert_percent_axis(ax, peak)


def assert_percent_axis(ax: Any, peak: float) -> None:
    """The axis ends past the peak: at 100 % or above, or 20 % above a peak under 50 %."""
    top = ax.get_ylim()[1]
    if peak < ZOOM_BELOW_PERCENT:
        assert top == pytest.approx(1.2 * peak)
    else:
        assert top >= max(100.0, peak)


def test_memory_per_worker_is_percent_of_limit(metrics: dict[str, Any]) -> None:
    expected = memory_percent(metrics["tracking_data"])
    _, ax = memory.plot_memory_utilization_per_worker_timeline(metrics["tracking_data"])
    lines = lines_by_label(ax)
    assert set(lines) == set(expected)
    # Without the block's start: seconds since the first instant drawn, as the label says.
    first = min(t for points in expected.values() for t, _ in points)
    assert ax.get_xlabel() == f"seconds since {first:%H:%M:%S} UTC (the first instant)"
    for worker, points in expected.items():
        np.testing.assert_allclose(
            lines[worker].get_xdata(), since([t for t, _ in points], first.timestamp()), atol=1e-6
        )
        np.testing.assert_allclose(lines[worker].get_ydata(), [p for _, p in points])
    assert ax.get_ylabel() == "memory (% of limit)"
    # The run used a few % of its limit: the axis ends near the data, and says so.
    peak = max(p for points in expected.values() for _, p in points)
    assert peak < 50 and ax.get_ylim() == (0.0, pytest.approx(1.2 * peak))
    assert any("the axis ends at" in t.get_text() for t in ax.texts)


def band_range(ax: Axes) -> tuple[float, float]:
    """The lowest and highest y of the min-max band."""
    vertices = ax.collections[0].get_paths()[0].vertices
    return float(vertices[:, 1].min()), float(vertices[:, 1].max())


def check_mean_band(ax: Axes, grouped: dict[dt.datetime, list[float]], origin: float) -> None:
    """The mean line and the min-max band equal the per-instant statistics."""
    mean = lines_by_label(ax)["mean"]
    np.testing.assert_allclose(mean.get_xdata(), since(grouped, origin), atol=1e-6)
    np.testing.assert_allclose(mean.get_ydata(), [np.mean(v) for v in grouped.values()])
    low = min(min(v) for v in grouped.values())
    high = max(max(v) for v in grouped.values())
    np.testing.assert_allclose(band_range(ax), (low, high))


def test_cpu_mean_timeline(metrics: dict[str, Any]) -> None:
    grouped = per_instant(metrics["tracking_data"]["worker_cpu"])
    origin = metrics["time_origin"]
    _, ax = cpu.plot_cpu_utilization_mean_timeline(metrics["tracking_data"], origin=origin)
    check_mean_band(ax, grouped, origin)
    assert ax.get_ylabel() == "CPU (% of one core)"
    assert_percent_axis(ax, max(max(v) for v in grouped.values()))
    assert ax.get_title() == "CPU Utilization Over Time"


def test_memory_mean_timeline(metrics: dict[str, Any]) -> None:
    grouped = per_instant(memory_percent(metrics["tracking_data"]))
    origin = metrics["time_origin"]
    _, ax = memory.plot_memory_utilization_mean_timeline(metrics["tracking_data"], origin=origin)
    check_mean_band(ax, grouped, origin)
    assert ax.get_ylabel() == "memory (% of limit)"


def test_total_active_tasks_is_the_sum_per_instant(metrics: dict[str, Any]) -> None:
    grouped = per_instant(metrics["tracking_data"]["worker_active_tasks"])
    origin = metrics["time_origin"]
    _, ax = throughput.plot_total_active_tasks_timeline(metrics["tracking_data"], origin=origin)
    line, threads = ax.get_lines()
    np.testing.assert_allclose(line.get_xdata(), since(grouped, origin), atol=1e-6)
    np.testing.assert_allclose(line.get_ydata(), [sum(v) for v in grouped.values()])
    assert max(line.get_ydata()) > 0
    assert ax.get_ylabel() == "tasks assigned (executing or waiting)"
    cores = per_instant(metrics["tracking_data"]["worker_cores"])
    np.testing.assert_allclose(threads.get_ydata(), [sum(v) for v in cores.values()])
    assert threads.get_label().startswith("threads")


def test_worker_count_timeline(metrics: dict[str, Any]) -> None:
    counts = metrics["tracking_data"]["worker_counts"]
    origin = metrics["time_origin"]
    _, ax = workers.plot_worker_count_timeline(metrics["tracking_data"], origin=origin)
    (line,) = ax.get_lines()
    np.testing.assert_allclose(line.get_xdata(), since(sorted(counts), origin), atol=1e-6)
    assert list(line.get_ydata()) == [counts[t] for t in sorted(counts)]
    assert set(line.get_ydata()) == {2}
    assert ax.get_ylabel() == "workers"
    assert ax.get_title() == "Worker Count Over Time"


def handmade_tracking(workers_: int, cpu_peak: float = 50.0) -> dict[str, Any]:
    """Series of ``workers_`` workers at three shared instants, one value unreported."""
    times = [dt.datetime(2025, 1, 1, 0, 0, s, tzinfo=UTC) for s in (0, 1, 2)]
    names = [f"tcp://10.0.0.{i}:1" for i in range(workers_)]
    cpu_values = {name: [10.0 * i, None, cpu_peak] for i, name in enumerate(names)}
    return {
        "worker_counts": dict.fromkeys(times, workers_),
        "worker_cpu": {n: list(zip(times, cpu_values[n], strict=True)) for n in names},
        "worker_memory": {n: [(t, 1e9) for t in times] for n in names},
        "worker_memory_limit": {n: [(t, 0.0) for t in times] for n in names},
    }


def test_many_workers_note_instead_of_legend_and_none_skipped() -> None:
    tracking = handmade_tracking(7)
    _, ax = cpu.plot_cpu_utilization_per_worker_timeline(tracking)
    assert ax.get_legend() is None
    assert "7 workers" in texts(ax)
    assert len(ax.get_lines()) == 7
    assert all(len(line.get_ydata()) == 2 for line in ax.get_lines())  # the None is skipped
    _, ax = cpu.plot_cpu_utilization_per_worker_timeline(tracking, max_legend_entries=7)
    assert len(ax.get_legend().get_texts()) == 7


def test_cpu_above_100_percent_is_shown() -> None:
    tracking = handmade_tracking(2, cpu_peak=250.0)
    for plot in (
        cpu.plot_cpu_utilization_per_worker_timeline,
        cpu.plot_cpu_utilization_mean_timeline,
    ):
        _, ax = plot(tracking)
        assert ax.get_ylim()[1] >= 250.0


# -- throughput -------------------------------------------------------------------------------

RATE_UNITS = {"Gbps": 1.0, "Mbps": 1e-3, "kbps": 1e-6, "bps": 1e-9}


def drawn_gbps(ax: Axes, origin: float) -> tuple[list[float], np.ndarray]:
    """Edges (epoch s) and rates (Gbit/s) of the throughput line, whatever its unit."""
    unit = ax.get_ylabel().removeprefix("throughput (").removesuffix(")")
    line = lines_by_label(ax)["throughput"]
    edges = [origin + t for t in line.get_xdata()]
    return edges, np.asarray(line.get_ydata()) * RATE_UNITS[unit]


def expected_gbps(chunk_info: dict[Any, Any]) -> tuple[list[float], list[float]]:
    """At every boundary, the sum of the rates of the chunks running from it on."""
    runs = [(a, b, n * 8 / 1e9 / (b - a)) for a, b, n in chunk_info.values() if n is not None]
    edges = sorted({t for a, b, _ in runs for t in (a, b)})
    return edges, [sum(r for a, b, r in runs if a <= e < b) for e in edges]


def test_throughput_is_exact_at_every_chunk_boundary(metrics: dict[str, Any]) -> None:
    info = metrics["chunk_info"]
    assert len(info) == 28 and all(n is not None for _, _, n in info.values())
    origin = metrics["time_origin"]
    fig, ax = throughput.plot_throughput_timeline(info, metrics["tracking_data"], origin=origin)
    edges, rates = drawn_gbps(ax, origin)
    want_edges, want_rates = expected_gbps(info)
    np.testing.assert_allclose(edges, want_edges, rtol=0, atol=1e-5)
    np.testing.assert_allclose(rates, want_rates, rtol=1e-9, atol=1e-15)
    assert rates[-1] == 0.0 and max(rates) > 0
    assert ax.get_ylabel() in {f"throughput ({u})" for u in RATE_UNITS}
    twin = next(a for a in fig.axes if a is not ax)
    (workers_line,) = twin.get_lines()
    counts = metrics["tracking_data"]["worker_counts"]
    assert list(workers_line.get_ydata()) == [counts[t] for t in sorted(counts)]
    assert twin.get_ylabel() == "workers"


def test_throughput_sums_overlapping_chunks_and_skips_unmeasured() -> None:
    info = {
        ("a", 0, 10): (100.0, 102.0, 1e9),  # 4 Gbit/s
        ("a", 10, 20): (101.0, 103.0, 0.5e9),  # 2 Gbit/s
        ("b", 0, 10): (100.5, 101.5, None),  # not measured
    }
    _, ax = throughput.plot_throughput_timeline(info)
    edges, rates = drawn_gbps(ax, 100.0)  # no origin given: the first edge
    assert edges == [100.0, 101.0, 102.0, 103.0]
    np.testing.assert_allclose(rates, [4.0, 6.0, 2.0, 0.0])
    assert ax.get_ylabel() == "throughput (Gbps)"
    assert "1 of 3 chunks without bytes_read left out" in texts(ax)
    with pytest.raises(ValueError, match="bytes_read"):
        throughput.plot_throughput_timeline({("b", 0, 10): (1.0, 2.0, None)})


def test_throughput_of_many_chunks_is_binned_and_keeps_every_byte() -> None:
    n = throughput.MAX_THROUGHPUT_STEPS  # 2n boundaries: binned
    info = {
        ("f", i, i + 1): (1e9 + 0.7 * i, 1e9 + 0.7 * i + 1.0 + (i % 5) * 0.1, 1e6 * (1 + i % 3))
        for i in range(n)
    }
    _, ax = throughput.plot_throughput_timeline(info)
    edges, rates = drawn_gbps(ax, 1e9)
    assert len(edges) == throughput.THROUGHPUT_BINS + 1
    assert "mean over" in ax.get_title() and rates[-1] == 0.0
    sent = sum(b for _, _, b in info.values()) * 8 / 1e9
    drawn = float(np.sum(np.diff(edges) * np.array(rates[:-1])))
    assert drawn == pytest.approx(sent, rel=1e-9)
    steps, rate, _, _ = throughput._throughput_steps(info)
    grid, means = throughput._binned(steps, rate, throughput.THROUGHPUT_BINS)
    assert float(np.sum(np.diff(grid) * means[:-1])) == pytest.approx(sent, rel=1e-12)


# -- chunks -----------------------------------------------------------------------------------


def hist_counts(ax: Axes) -> list[float]:
    """Heights of the histogram bars."""
    return [p.get_height() for p in ax.patches]


def test_runtime_distribution(metrics: dict[str, Any]) -> None:
    records = metrics["raw_chunk_metrics"]
    durations = [r["duration"] for r in records if r["error"] is None]
    _, ax = chunks.plot_runtime_distribution(records)
    bins = histogram_bins(len(durations), 30)
    assert bins < 30 and hist_counts(ax) == list(np.histogram(durations, bins=bins)[0])
    lines = ax.get_lines()
    assert lines[0].get_xdata()[0] == pytest.approx(np.mean(durations))
    assert lines[1].get_xdata()[0] == pytest.approx(np.median(durations))
    assert ax.get_xlabel() == "duration (s)" and ax.get_ylabel() == "chunks"


def test_failed_chunks_are_left_out_of_runtimes(metrics: dict[str, Any]) -> None:
    records = [dict(r) for r in metrics["raw_chunk_metrics"]]
    records[0]["error"] = "OSError: file vanished"
    records[0]["duration"] = 1000.0
    _, ax = chunks.plot_runtime_distribution(records, bins=5)
    assert sum(hist_counts(ax)) == len(records) - 1
    assert max(p.get_x() + p.get_width() for p in ax.patches) < 1000.0
    assert "1 failed chunk left out" in texts(ax)
    _, ax = chunks.plot_runtime_vs_events(records)
    assert sum(len(c.get_offsets()) for c in ax.collections) == len(records) - 1
    with pytest.raises(ValueError, match="duration"):
        chunks.plot_runtime_distribution([records[0]])


def test_runtime_vs_events(metrics: dict[str, Any]) -> None:
    records = metrics["raw_chunk_metrics"]
    _, ax = chunks.plot_runtime_vs_events(records)
    points = sorted((r["num_events"], r["duration"]) for r in records)
    drawn = [tuple(p) for c in ax.collections for p in c.get_offsets().tolist()]
    assert sorted(drawn) == points
    assert {c.get_label() for c in ax.collections} == {
        f"{r['dataset']}: chunks" for r in records
    }  # one colour per dataset
    assert ax.get_lines() == []  # every chunk has 10 events: no line to fit
    assert ax.get_xlabel() == "events per chunk" and ax.get_ylabel() == "duration (s)"


def test_runtime_vs_events_fits_a_line() -> None:
    records = [{"num_events": n, "duration": 0.5 + 0.002 * n, "error": None} for n in (10, 50, 100)]
    _, ax = chunks.plot_runtime_vs_events(records)
    (fit,) = ax.get_lines()
    np.testing.assert_allclose(fit.get_ydata(), [0.52, 0.7])
    assert "2 ms/event" in fit.get_label()


# -- I/O --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("plot", "key", "xlabel"),
    [
        (
            io.plot_compression_ratio_distribution,
            "compression_ratios",
            "compression ratio (uncompressed / compressed bytes)",
        ),
        (
            io.plot_data_access_percentage,
            "bytes_read_percent_per_file",
            "bytes read (% of the file)",
        ),
    ],
    ids=["compression", "access"],
)
def test_per_file_histograms(
    metrics: dict[str, Any], plot: Callable[..., Any], key: str, xlabel: str
) -> None:
    values = [v for v in metrics[key] if v is not None]
    assert len(values) >= 2  # one per file read (three files)
    _, ax = plot(metrics)
    assert hist_counts(ax) == list(np.histogram(values, bins=histogram_bins(len(values), 20))[0])
    assert ax.get_xlabel() == xlabel and ax.get_ylabel() == "files"
    if key == "bytes_read_percent_per_file":
        assert ax.get_xlim() == (0.0, pytest.approx(min(100.0, 1.1 * max(values))))


def in_start_order(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(records, key=lambda r: r["t_start"])


def test_branch_access_per_chunk(metrics: dict[str, Any]) -> None:
    records = in_start_order(metrics["raw_chunk_metrics"])
    _, ax = io.plot_branch_access_per_chunk(metrics["raw_chunk_metrics"])
    assert bar_heights(ax)["branches"] == [r["num_branches_accessed"] for r in records]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[1:] == ["dimuon", "dy", "ttbar"]
    assert ax.get_ylabel() == "branches accessed"


def test_bytes_accessed_per_chunk(metrics: dict[str, Any]) -> None:
    records = in_start_order(metrics["raw_chunk_metrics"])
    _, ax = io.plot_bytes_accessed_per_chunk(metrics["raw_chunk_metrics"])
    largest = max(r["accessed_uncompressed_bytes"] for r in records)
    assert 0.9 * 2**10 <= largest < 0.9 * 2**20  # so the unit is kiB
    assert ax.get_ylabel() == "bytes accessed (kiB)"
    heights = bar_heights(ax)
    np.testing.assert_allclose(
        np.array(heights["compressed"]) * 2**10, [r["accessed_bytes"] for r in records]
    )
    np.testing.assert_allclose(
        np.array(heights["uncompressed"]) * 2**10,
        [r["accessed_uncompressed_bytes"] for r in records],
    )


def test_per_chunk_figures_of_many_chunks_draw_the_same_values_as_steps() -> None:
    n = io.MAX_CHUNK_BARS + 500
    records = [
        {
            "t_start": 1.7e9 + i,
            "dataset": ("a", "b")[i % 2],
            "num_branches_accessed": 1 + i % 7,
            "accessed_bytes": 1000 + i,
            "accessed_uncompressed_bytes": 3000 + 2 * i,
        }
        for i in range(n)
    ]
    _, ax = io.plot_branch_access_per_chunk(records)
    assert not ax.patches and len(ax.collections) == 2  # one step polygon per dataset
    drawn = sum(step_values(c) for c in ax.collections)
    np.testing.assert_array_equal(drawn, [r["num_branches_accessed"] for r in records])
    _, ax = io.plot_bytes_accessed_per_chunk(records)
    by_label = {c.get_label(): step_values(c) for c in ax.collections}
    assert ax.get_ylabel() == "bytes accessed (kiB)"
    np.testing.assert_allclose(
        by_label["compressed"] * 2**10, [r["accessed_bytes"] for r in records]
    )
    np.testing.assert_allclose(
        by_label["uncompressed"] * 2**10, [r["accessed_uncompressed_bytes"] for r in records]
    )


def step_values(collection: Any) -> np.ndarray:
    """The per-chunk heights of a filled step polygon (chunk i over [i - 0.5, i + 0.5])."""
    vertices = np.asarray(collection.get_paths()[0].vertices)
    closing = len(vertices) % 2  # a closed polygon repeats its first vertex at the end
    tops = vertices[1 : len(vertices) - 1 - closing]
    assert np.array_equal(tops[0::2, 0] + 1, tops[1::2, 0])  # each step one chunk wide
    return tops[0::2, 1]


# -- per task ---------------------------------------------------------------------------------


def test_per_task_cpu_io(metrics: dict[str, Any]) -> None:
    spans = metrics["raw_span_metrics"]
    sums: dict[str, dict[str, float]] = defaultdict(
        lambda: {"thread-cpu": 0.0, "thread-noncpu": 0.0}
    )
    for (context, prefix, activity, unit), value in spans.items():
        if (
            context == "execute"
            and unit == "seconds"
            and activity in ("thread-cpu", "thread-noncpu")
        ):
            sums[prefix][activity] += value
    order = sorted(sums, key=lambda p: -sum(sums[p].values()))
    assert order[0] == "MeasuredProcessor"
    _, ax = per_task.plot_per_task_cpu_io(spans)
    assert [t.get_text() for t in ax.get_xticklabels()] == order
    heights = bar_heights(ax)
    np.testing.assert_allclose(heights["CPU (thread-cpu)"], [sums[p]["thread-cpu"] for p in order])
    np.testing.assert_allclose(
        heights["non-CPU (thread-noncpu)"], [sums[p]["thread-noncpu"] for p in order]
    )
    assert ax.get_ylabel() == "thread time (s)"


#: Span metrics of a run that spilled, as Dask reports them (three units for disk-read).
SPILLED = {
    ("execute", "process", "disk-read", "bytes"): 3.0 * 2**30,
    ("execute", "process", "disk-read", "count"): 12.0,
    ("execute", "process", "disk-read", "seconds"): 4.5,
    ("execute", "process", "decompress", "seconds"): 0.75,
    ("execute", "process", "deserialize", "seconds"): 0.25,
    ("execute", "reduce", "disk-read", "bytes"): 1.5 * 2**30,
    ("execute", "reduce", "compress", "seconds"): 0.5,
    ("execute", "reduce", "serialize", "seconds"): 2.0,
    ("execute", "reduce", "serialize", "count"): 99.0,
    ("execute", "N/A", "disk-read", "bytes"): 7.0e9,
    ("gather-dep", "disk-read", "bytes"): 5.0e9,
    ("gather-dep", "", "decompress", "seconds"): 9.0,
}


def test_per_task_bytes_read_uses_bytes_only() -> None:
    _, ax = per_task.plot_per_task_bytes_read(SPILLED)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["process", "reduce"]
    assert bar_heights(ax)["disk-read"] == [3.0, 1.5]
    assert ax.get_ylabel() == "spill read from disk (GiB)"


def test_per_task_overhead_stacks_seconds_only() -> None:
    _, ax = per_task.plot_per_task_overhead(SPILLED)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["reduce", "process"]
    heights = bar_heights(ax)
    assert heights == {
        "compress": [0.5, 0.0],
        "decompress": [0.0, 0.75],
        "serialize": [2.0, 0.0],
        "deserialize": [0.0, 0.25],
    }
    serialize, deserialize = (
        c for c in ax.containers if c.get_label() in ("serialize", "deserialize")
    )
    assert [p.get_y() for p in deserialize] == [p.get_height() for p in serialize]
    assert ax.get_ylabel() == "time (s)"


def test_measured_run_never_spilled(metrics: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="'disk-read' activity in 'bytes'"):
        per_task.plot_per_task_bytes_read(metrics["raw_span_metrics"])
    with pytest.raises(ValueError, match="'compress'"):
        per_task.plot_per_task_overhead(metrics["raw_span_metrics"])


# -- summaries --------------------------------------------------------------------------------


def test_efficiency_summary_has_one_unit_per_axes(metrics: dict[str, Any]) -> None:
    fig, ax = scaling.plot_efficiency_summary(metrics)
    axes = fig.axes
    assert ax is axes[0] and len(axes) == 2
    assert bar_heights(axes[0])["core efficiency"] == [
        pytest.approx(metrics["core_efficiency"] * 100)
    ]
    assert bar_heights(axes[1])["speedup"] == [pytest.approx(metrics["speedup_factor"])]
    assert axes[0].get_ylabel() == "core efficiency (%)"
    assert "\N{MULTIPLICATION SIGN}" in axes[1].get_ylabel()
    ideal = lines_by_label(axes[1])[f"ideal: {metrics['total_cores']:.3g} cores"]
    assert ideal.get_ydata()[0] == metrics["total_cores"]
    assert fig.get_suptitle() == "Efficiency Metrics Summary"


def test_efficiency_summary_shows_unmeasured_as_na(measured: Measured) -> None:
    metrics = dict(measured.metrics)
    metrics["core_efficiency"] = None
    metrics["unavailable"] = {"core_efficiency": "no worker tracking"}
    _, ax = scaling.plot_efficiency_summary(metrics)
    assert ax.containers == []
    assert "N/A" in texts(ax) and "no worker tracking" in texts(ax)
    metrics["speedup_factor"] = None
    with pytest.raises(ValueError, match=r"core_efficiency.*speedup_factor.*no worker tracking"):
        scaling.plot_efficiency_summary(metrics)


def test_resource_utilization(metrics: dict[str, Any]) -> None:
    fig, first = scaling.plot_resource_utilization(metrics)
    axes = fig.axes
    assert first is axes[0]
    factor, unit = byte_unit(metrics["peak_memory_bytes"])
    assert [ax.get_ylabel() for ax in axes] == ["workers", "cores (threads)", f"memory ({unit})"]
    assert bar_heights(axes[0]) == {
        "average": [pytest.approx(metrics["avg_workers"])],
        "peak": [pytest.approx(metrics["peak_workers"])],
    }
    assert bar_heights(axes[1])["average"] == [pytest.approx(metrics["total_cores"])]
    assert bar_heights(axes[2])["peak"] == [pytest.approx(metrics["peak_memory_bytes"] / factor)]
    assert fig.get_suptitle() == "Resource Utilization Summary"


# -- missing data ------------------------------------------------------------------------------

MISSING = [
    (workers.plot_worker_count_timeline, None, "tracking_data is None.*worker_counts"),
    (workers.plot_worker_count_timeline, {}, "'worker_counts'"),
    (cpu.plot_occupancy_timeline, {}, "'worker_occupancy'"),
    (cpu.plot_executing_tasks_timeline, {"worker_executing": {}}, "'worker_executing'"),
    (
        cpu.plot_cpu_utilization_mean_timeline,
        {"worker_cpu": {"w": [(dt.datetime(2025, 1, 1, tzinfo=UTC), None)]}},
        "'worker_cpu'.*no reported value",
    ),
    (cpu.plot_cpu_utilization_per_worker_timeline, {}, "'worker_cpu'"),
    (memory.plot_memory_utilization_mean_timeline, {}, "'worker_memory'"),
    (memory.plot_memory_utilization_per_worker_timeline, handmade_tracking(2), "memory_limit"),
    (throughput.plot_worker_activity_timeline, {}, "'worker_active_tasks'"),
    (throughput.plot_total_active_tasks_timeline, None, "worker_active_tasks"),
    (throughput.plot_throughput_timeline, {}, "chunk_info"),
    (chunks.plot_runtime_distribution, [], "raw_chunk_metrics"),
    (chunks.plot_runtime_vs_events, None, "raw_chunk_metrics"),
    (chunks.plot_runtime_vs_events, {"duration": 1.0}, "list of chunk records"),
    (io.plot_compression_ratio_distribution, {}, "'compression_ratios'"),
    (io.plot_data_access_percentage, {"bytes_read_percent_per_file": [None]}, "bytes_read_percent"),
    (io.plot_branch_access_per_chunk, [{"error": None}], "'num_branches_accessed'"),
    (io.plot_bytes_accessed_per_chunk, [{"accessed_bytes": 5}], "'accessed_uncompressed_bytes'"),
    (per_task.plot_per_task_cpu_io, {}, "raw_span_metrics"),
    (per_task.plot_per_task_cpu_io, {"execute.x.thread-cpu": 1.0}, "tuples"),
    (scaling.plot_efficiency_summary, None, "core_efficiency"),
    (scaling.plot_resource_utilization, {}, "avg_workers.*total_cores.*peak_memory_bytes"),
]


@pytest.mark.parametrize(("plot", "data", "message"), MISSING, ids=param_id)
def test_missing_data_raises_value_error_naming_it(
    plot: Callable[..., Any], data: Any, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        plot(data)


def test_throughput_with_tracking_data_lacking_worker_counts(metrics: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="'worker_counts'"):
        throughput.plot_throughput_timeline(metrics["chunk_info"], {"worker_cpu": {}})


def test_per_task_plots_take_the_3_tuple_keys_of_0_1_2() -> None:
    """0.1.2 read span metrics keyed (context, prefix, activity) in the plot's unit."""
    old = {
        ("execute", "process", "thread-cpu"): 2.0,
        ("execute", "process", "thread-noncpu"): 0.5,
        ("execute", "reduce", "thread-cpu"): 1.0,
    }
    _, ax = per_task.plot_per_task_cpu_io(old)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["process", "reduce"]
    heights = bar_heights(ax)
    assert heights["CPU (thread-cpu)"] == [2.0, 1.0]
    assert heights["non-CPU (thread-noncpu)"] == [0.5, 0.0]
    assert per_task.extract_per_task_metrics(old) == {
        "process": {"thread-cpu": 2.0, "thread-noncpu": 0.5},
        "reduce": {"thread-cpu": 1.0},
    }
