"""Chunk runtimes per dataset."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from roastcoffea.plots._common import (
    COLORS,
    caption,
    figure,
    label_axes,
    new_figure,
    require,
    say_instead,
)
from roastcoffea.plots._types import FigureAxes, Size
from roastcoffea.units import format_time

#: Label of chunks whose record names no dataset.
NO_DATASET = "(no dataset)"


def durations_per_dataset(
    chunk_metrics: Sequence[Mapping[str, Any]],
) -> dict[str, list[float]]:
    """Finite durations of the successful chunks, per dataset, datasets sorted by name."""
    per_dataset: dict[str, list[float]] = {}
    for record in chunk_metrics:
        duration = record.get("duration")
        if record.get("error") or duration is None or not math.isfinite(duration):
            continue
        dataset = record.get("dataset")
        name = NO_DATASET if dataset is None else str(dataset)
        per_dataset.setdefault(name, []).append(float(duration))
    return dict(sorted(per_dataset.items()))


@figure(figsize=(10, 6), title="Chunk Runtime per Dataset")
def plot_dataset_runtimes(
    chunk_metrics: Sequence[dict[str, Any]], figsize: Size, title: str
) -> FigureAxes:
    """Box plot of the chunk durations of each dataset, with the chunk count per dataset.

    One box per dataset (sorted by name) of the ``duration`` (s) of its
    successful chunks, whiskers at 1.5 IQR, means as triangles, every chunk as
    a dot; the tick labels read ``"<dataset>\\nn=<chunks>"``. Failed chunks
    (``error`` set) are left out, and their count is noted.

    Reads ``dataset``, ``duration`` (s) and ``error``.

    Returns
    -------
    tuple
        ``(fig, ax)``; the median line of each box has the gid
        ``"median:<dataset>"``, the dots of its chunks ``"chunks:<dataset>"``.

    Raises
    ------
    ValueError
        When there are no chunk records, or no successful one with a duration.
    """
    records = require(chunk_metrics, "chunk records (raw_chunk_metrics)")
    per_dataset = durations_per_dataset(records)
    if not per_dataset:
        raise ValueError("no successful chunk record with a duration to plot")
    names = list(per_dataset)
    fig, ax = new_figure(figsize)
    if all(len(durations) == 1 for durations in per_dataset.values()):
        ax.set_title(title)
        say_instead(
            ax,
            "one chunk per dataset, no distribution to draw:\n"
            + "\n".join(f"{name}: {format_time(d[0])}" for name, d in per_dataset.items()),
        )
        return fig, ax
    boxes = ax.boxplot(
        list(per_dataset.values()),
        showmeans=True,
        patch_artist=True,
        widths=0.5,
        medianprops={"color": "black"},
    )
    for name, box, median in zip(names, boxes["boxes"], boxes["medians"], strict=True):
        box.set_facecolor(COLORS[0])
        box.set_alpha(0.5)
        median.set_gid(f"median:{name}")
    for position, (name, durations) in enumerate(per_dataset.items(), start=1):
        ax.plot(
            [position] * len(durations),
            durations,
            "o",
            color=COLORS[1],
            markersize=3,
            alpha=0.6,
            gid=f"chunks:{name}",
        )
    ax.set_xticks(
        range(1, len(names) + 1),
        [f"{name}\nn={len(per_dataset[name])}" for name in names],
    )
    label_axes(ax, "dataset", "duration (s)", title, grid="y")
    failed = sum(1 for record in records if record.get("error"))
    if failed:
        caption(ax, f"{failed} failed chunk(s) left out")
    return fig, ax
