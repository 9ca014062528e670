"""The phase figures, drawn from a real measured run: what is drawn equals the metrics."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from roastcoffea.plots.phases import (
    PHASE_COLORS,
    plot_phase_heatmap,
    plot_phase_shares_per_dataset,
    plot_phase_timeline,
)

pytestmark = pytest.mark.usefixtures("no_pyplot_figures")


def drawn_segments(ax: Any) -> list[tuple[float, float]]:
    """(left, right) of every rectangle the timeline's collections hold."""
    out = []
    for collection in ax.collections:
        for path in collection.get_paths():
            xs = path.vertices[:, 0]
            out.append((float(xs.min()), float(xs.max())))
    return out


def test_timeline_draws_one_segment_per_phase_of_every_task(metrics: dict[str, Any]) -> None:
    records = metrics["raw_phase_records"]
    _, ax = plot_phase_timeline(records)
    segments = drawn_segments(ax)
    widths = sorted(round(right - left, 9) for left, right in segments)
    expected = sorted(
        round(s, 9) for r in records for s in r["wall"].values() if isinstance(s, float) and s > 0
    )
    assert widths == expected
    # every bar ends where its task's compute time ends
    t0 = min(r["t_start"] for r in records)
    ends = {round(right, 6) for _, right in segments}
    assert {round(r["t_start"] - t0 + r["elapsed"], 6) for r in records} <= ends
    lanes = {(r["worker"], r["thread"]) for r in records}
    assert len(ax.get_yticks()) == len(lanes)


def test_dataset_shares_add_up_to_100_percent(metrics: dict[str, Any]) -> None:
    _, ax = plot_phase_shares_per_dataset(metrics)
    datasets = sorted(metrics["phase_per_dataset"])
    totals = np.zeros(len(datasets))
    for patch in ax.patches:
        totals[round(patch.get_y() + patch.get_height() / 2)] += patch.get_width()
    assert totals == pytest.approx(np.full(len(datasets), 100.0))


def test_heatmap_cells_are_the_per_worker_seconds(metrics: dict[str, Any]) -> None:
    _, ax = plot_phase_heatmap(metrics)
    table = metrics["phase_per_worker"]
    workers = sorted(table)
    phases = [p for p in PHASE_COLORS if any(p in table[w] for w in workers)]
    image = ax.get_images()[0].get_array()
    assert np.asarray(image).tolist() == [[table[w].get(p, 0.0) for p in phases] for w in workers]


@pytest.mark.parametrize(
    ("plot", "data", "message"),
    [
        (plot_phase_timeline, [], "no phase record with times to plot"),
        (plot_phase_shares_per_dataset, {}, "no 'phase_per_dataset'"),
        (plot_phase_heatmap, {"phase_per_worker": None}, "no 'phase_per_worker'"),
    ],
)
def test_missing_data_is_named(plot: Any, data: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        plot(data)
