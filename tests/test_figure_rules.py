"""Every figure of the catalog keeps the figure rules, on three shapes of real runs.

The shapes: the demo's (one dataset of equal chunks), a run of a single chunk, and a run
with one dataset five times larger than the others (the measured run of tests/data). Each
is a real coffea run on the session cluster. The rules (docs/plots.md, "Figure rules"):

- a legend sits beside the axes, never over data;
- an axis of counts has whole-number ticks;
- no axis is microscopic (no offset, no tick needing more than four figures);
- no axes is empty: it draws data, or says in words why there is none to draw;
- lines of several workers stay distinguishable where they coincide;
- every numeric axis is labelled.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from distributed import Client
from matplotlib.axes import Axes
from matplotlib.colors import to_hex
from matplotlib.dates import ConciseDateFormatter
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from measured_run import Measured

from roastcoffea.demo.analysis import run_demo
from roastcoffea.plots.catalog import applicable_plots
from roastcoffea.plots.wall_split import TAIL_COLOR, TASK_COLOR, task_intervals
from roastcoffea.units import format_time

#: Labels of axes that count things.
COUNTS = re.compile(r"^(chunks|files|workers|branches accessed|chunk \(in start order\)|tasks)")

SHAPES = ("demo", "one chunk", "one large dataset")


@pytest.fixture(scope="module")
def shapes(
    client: Client, measured: Measured, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, Any]]:
    root = tmp_path_factory.mktemp("shapes")
    demo = run_demo(root / "data", 40_000, 2, 5_000, client=client, output_dir=root, summary=False)
    one = run_demo(
        root / "one", 5_000, 1, 10_000, client=client, output_dir=root, summary=False,
        measurement_name="one",
    )  # fmt: skip
    assert demo.metrics is not None and one.metrics is not None
    assert demo.metrics["num_chunks"] == 8 and one.metrics["num_chunks"] == 1
    return {"demo": demo.metrics, "one chunk": one.metrics, "one large dataset": measured.metrics}


def figures(metrics: dict[str, Any]) -> Iterator[tuple[str, Figure]]:
    """Every applicable figure of ``metrics``, drawn (so that extents are known)."""
    for entry in applicable_plots(metrics):
        fig, _ = entry.draw(metrics)
        fig.canvas.draw()
        yield entry.name, fig


def plot_axes(fig: Figure) -> list[Axes]:
    """The axes that hold data (colour bars left out)."""
    return [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]


def numeric_ticks(ax: Axes, which: str) -> list[str]:
    """The tick labels of an axis that are plain numbers (not dates, names)."""
    labels = ax.get_xticklabels() if which == "x" else ax.get_yticklabels()
    texts = [
        t.get_text().replace("\u2212", "-").replace(",", "") for t in labels if t.get_visible()
    ]
    return [t for t in texts if re.fullmatch(r"-?\d+(\.\d+)?", t)]


def broken(shapes: dict[str, dict[str, Any]], check: Any) -> list[str]:
    """``name (shape): what`` for every figure where ``check(fig)`` says what is wrong."""
    found = []
    for shape, metrics in shapes.items():
        for name, fig in figures(metrics):
            found += [f"{name} ({shape}): {what}" for what in check(fig)]
    return found


def test_the_three_shapes_draw_most_of_the_catalog(shapes: dict[str, dict[str, Any]]) -> None:
    for shape, metrics in shapes.items():
        assert len(applicable_plots(metrics)) >= 20, shape


def test_legends_never_cover_data(shapes: dict[str, dict[str, Any]]) -> None:
    def check(fig: Figure) -> Iterator[str]:
        areas = [ax.get_window_extent() for ax in plot_axes(fig)]
        for ax in fig.axes:
            legend = ax.get_legend()
            if legend is not None:
                box = legend.get_window_extent()
                if any(box.overlaps(area) for area in areas):
                    yield "a legend over the axes"

    assert not broken(shapes, check)


def test_legends_never_cover_ticks_or_axis_labels(shapes: dict[str, dict[str, Any]]) -> None:
    def check(fig: Figure) -> Iterator[str]:
        renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
        texts = [
            text
            for ax in fig.axes
            for text in (
                *ax.get_xticklabels(),
                *ax.get_yticklabels(),
                ax.xaxis.label,
                ax.yaxis.label,
            )
            if text.get_visible() and text.get_text()
        ]
        for ax in fig.axes:
            legend = ax.get_legend()
            if legend is None:
                continue
            box = legend.get_window_extent(renderer)
            for text in texts:
                if box.overlaps(text.get_window_extent(renderer)):
                    yield f"the legend covers {text.get_text()!r}"

    assert not broken(shapes, check)


def test_every_timeline_counts_seconds_from_the_block_s_start(
    shapes: dict[str, dict[str, Any]],
) -> None:
    def check(fig: Figure) -> Iterator[str]:
        for ax in plot_axes(fig):
            if isinstance(ax.xaxis.get_major_formatter(), ConciseDateFormatter):
                yield "a time axis of dates"
            label = ax.get_xlabel()
            if label.startswith("seconds since") and label != "seconds since the block's start":
                yield f"a time axis from another origin: {label!r}"

    assert not broken(shapes, check)
    # The same instant is at the same x on two figures of one run.
    metrics = shapes["demo"]
    drawn = dict(figures(metrics))
    (split,) = plot_axes(drawn["wall_split"])
    (phases,) = plot_axes(drawn["phase_timeline"])
    first = min(r["t_start"] for r in metrics["raw_phase_records"])
    bars = [path.vertices[:, 0].min() for c in split.collections for path in c.get_paths()]
    assert min(bars) == pytest.approx(first - metrics["time_origin"], abs=1e-6)
    starts = [path.vertices[:, 0].min() for c in phases.collections for path in c.get_paths()]
    assert min(starts) == pytest.approx(first - metrics["time_origin"], abs=1e-6)


def test_the_wall_split_draws_each_task_once_and_the_tail_s_in_red(
    shapes: dict[str, dict[str, Any]],
) -> None:
    metrics = shapes["demo"]
    intervals = task_intervals(metrics)
    tail_start = metrics["wall_split"]["tail"]["start"]
    in_tail = sum(stop > tail_start for _, stop, _, _ in intervals)
    (split,) = plot_axes(dict(figures(metrics))["wall_split"])
    drawn = {
        to_hex(c.get_facecolor()[0]): len(c.get_paths()) for c in split.collections if c.get_paths()
    }
    expected = {to_hex(TASK_COLOR): len(intervals) - in_tail, to_hex(TAIL_COLOR): in_tail}
    assert drawn == {color: n for color, n in expected.items() if n}
    assert sum(drawn.values()) == len(intervals) > 0


def test_every_worker_thread_keeps_its_lane(shapes: dict[str, dict[str, Any]]) -> None:
    one = shapes["one chunk"]
    threads = sum(
        int(max(v for _, v in points)) for points in one["tracking_data"]["worker_cores"].values()
    )
    assert threads > 1  # the one chunk leaves threads idle
    drawn = dict(figures(one))
    (phases,) = plot_axes(drawn["phase_timeline"])
    labels = [t.get_text() for t in phases.get_yticklabels()]
    assert len(labels) == threads and sum("(idle)" in t for t in labels) == threads - 1
    (split,) = plot_axes(drawn["wall_split"])
    assert split.get_ylim() == (threads - 0.5, -0.5)


def test_the_icicle_s_labels_fit_their_frames(shapes: dict[str, dict[str, Any]]) -> None:
    for shape, metrics in shapes.items():
        drawn = dict(figures(metrics))
        if "profile_icicle" not in drawn:
            continue
        fig = drawn["profile_icicle"]
        renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
        (ax,) = plot_axes(fig)
        boxes = [p.get_window_extent(renderer) for p in ax.patches]
        labels = [t.get_window_extent(renderer) for t in ax.texts]
        assert labels, shape
        for label in labels:
            assert any(
                box.x0 <= label.x0 and label.x1 <= box.x1 and box.y0 <= label.y0 <= box.y1
                for box in boxes
            ), shape
        for a, b in itertools.combinations(labels, 2):
            assert not a.overlaps(b), shape


def test_runtimes_are_fitted_per_dataset(shapes: dict[str, dict[str, Any]]) -> None:
    from roastcoffea.plots.chunks import plot_runtime_vs_events

    # Two datasets of different cost per event: a line each, never one through both.
    records = [
        {"dataset": name, "num_events": n, "duration": offset + per_event * n}
        for name, per_event, offset in (("cheap", 1e-5, 0.5), ("dear", 4e-5, 0.1))
        for n in (1000, 2000, 3000, 4000)
    ]
    _, ax = plot_runtime_vs_events(records)
    fits = {line.get_label(): line for line in ax.get_lines()}
    assert sorted(fits) == ["cheap: 0.01 ms/event + 0.5 s", "dear: 0.04 ms/event + 0.1 s"]
    # A run whose datasets have too few chunk sizes: no line, and the caption names them.
    metrics = shapes["one large dataset"]
    datasets = {r["dataset"] for r in metrics["raw_chunk_metrics"]}
    (ax,) = plot_axes(dict(figures(metrics))["runtime_vs_events"])
    fitted = {str(line.get_label()).split(":")[0] for line in ax.get_lines()}
    captions = " ".join(t.get_text() for t in ax.texts)
    assert fitted | {d for d in datasets if d in captions} == datasets


def test_counts_have_whole_number_ticks(shapes: dict[str, dict[str, Any]]) -> None:
    def check(fig: Figure) -> Iterator[str]:
        for ax in plot_axes(fig):
            for which, label in (("x", ax.get_xlabel()), ("y", ax.get_ylabel())):
                if COUNTS.match(label):
                    low, high = sorted(ax.get_xlim() if which == "x" else ax.get_ylim())
                    axis = ax.xaxis if which == "x" else ax.yaxis
                    ticks = [t for t in axis.get_ticklocs() if low <= t <= high]
                    if any(t != round(t) for t in ticks):
                        yield f"{label!r} has ticks {ticks}"

    assert not broken(shapes, check)


def test_no_axis_is_microscopic(shapes: dict[str, dict[str, Any]]) -> None:
    def check(fig: Figure) -> Iterator[str]:
        for ax in plot_axes(fig):
            for which, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
                dates = isinstance(axis.get_major_formatter(), ConciseDateFormatter)
                if axis.get_offset_text().get_text() and not dates:
                    yield f"{which} axis offset {axis.get_offset_text().get_text()!r}"
                for tick in numeric_ticks(ax, which):
                    figures = len(tick.lstrip("-").replace(".", "").strip("0"))
                    if figures > 4:
                        yield f"{which} tick {tick!r}"

    assert not broken(shapes, check)


def draws_data(ax: Axes) -> bool:
    """Whether ``ax`` shows some data: a line with points, a bar with area, an image, a mesh."""
    lines = any(len(line.get_xdata()) for line in ax.get_lines())
    bars = any(p.get_width() * p.get_height() != 0 for p in ax.patches if hasattr(p, "get_width"))
    return lines or bars or bool(ax.images) or any(len(c.get_paths()) for c in ax.collections)


def test_no_axes_is_empty_and_degenerate_data_is_said_in_words(
    shapes: dict[str, dict[str, Any]],
) -> None:
    def check(fig: Figure) -> Iterator[str]:
        for ax in plot_axes(fig):
            if not ax.get_visible() or not ax.axison:
                continue
            ticks = len(ax.get_xticks()) + len(ax.get_yticks())
            if ticks and not draws_data(ax):
                yield f"axes {ax.get_title()!r} draws nothing"
            if not ticks and not ax.texts:
                yield f"axes {ax.get_title()!r} has neither data nor words"

    assert not broken(shapes, check)
    # The one-chunk run has a single runtime: said in words, not drawn as a bar or a dot.
    one = shapes["one chunk"]
    (chunk,) = one["raw_chunk_metrics"]
    duration = format_time(chunk["duration"])
    drawn = dict(figures(one))
    for name, words in (
        ("runtime_distribution", f"1 chunk: {duration}"),
        ("runtime_vs_events", f"1 chunk: {chunk['num_events']:,} events in {duration}"),
        ("dataset_runtimes", f"{chunk['dataset']}: {duration}"),
    ):
        (ax,) = plot_axes(drawn[name])
        assert not ax.patches and not ax.get_lines(), name
        assert any(words in t.get_text() for t in ax.texts), (name, words)


def test_coinciding_worker_lines_stay_distinguishable(shapes: dict[str, dict[str, Any]]) -> None:
    def check(fig: Figure) -> Iterator[str]:
        for ax in plot_axes(fig):
            legend = ax.get_legend()
            if legend is None or legend.get_title().get_text() != "worker":
                continue
            lines: list[Line2D] = [line for line in ax.get_lines() if line.get_label()[:1] != "_"]
            styles = {(line.get_linestyle(), line.get_marker()) for line in lines}
            widths = [line.get_linewidth() for line in lines]
            if len(styles) < len(lines):
                yield "two workers share a line style and marker"
            if any(a <= b for a, b in itertools.pairwise(widths)):
                yield f"line widths {widths} do not narrow in drawing order"

    assert not broken(shapes, check)


def test_every_numeric_axis_is_labelled(shapes: dict[str, dict[str, Any]]) -> None:
    def check(fig: Figure) -> Iterator[str]:
        axes = plot_axes(fig)
        for i, ax in enumerate(axes):
            twin = any(ax.get_shared_x_axes().joined(ax, other) for other in axes[:i])
            for which, label in (("x", ax.get_xlabel()), ("y", ax.get_ylabel())):
                if which == "x" and twin:
                    continue  # a twin axes shows its partner's x axis
                if numeric_ticks(ax, which) and not label:
                    yield f"{which} axis of {ax.get_title()!r} has no label"

    assert not broken(shapes, check)


def test_report_of_each_shape_is_written(shapes: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    from roastcoffea.report.html import write_report

    for shape, metrics in shapes.items():
        text = write_report(tmp_path / f"{shape}.html", metrics).read_text()
        assert 'class="figure-error"' not in text and text.count("data:image/png") >= 20, shape
