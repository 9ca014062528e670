"""What the analysis read: compression, share of the files, branches and bytes per chunk."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import PolyCollection
from matplotlib.patches import Patch

from roastcoffea.plots._common import (
    COLORS,
    caption,
    count_axis,
    figure,
    finite,
    label_axes,
    legend,
    new_figure,
    require_key,
)
from roastcoffea.plots._series import (
    chunk_records,
    draw_distribution,
    has_number,
    in_start_order,
)
from roastcoffea.plots._types import ChunkRecords, FigureAxes, MetricsLike, Size
from roastcoffea.units import byte_unit


def _per_file(metrics: Mapping[str, Any] | None, key: str) -> np.ndarray:
    """The finite per-file values of ``metrics[key]``, or ValueError naming the key."""
    values = finite(require_key(metrics, key, "metrics"))
    if not len(values):
        raise ValueError(f"metrics[{key!r}] has no measured value to plot")
    return values


@figure(
    figsize=(10, 6), title="Compression Ratio Distribution Across Files", needs="compression_ratios"
)
def plot_compression_ratio_distribution(
    metrics: MetricsLike, figsize: Size, title: str, bins: int = 20
) -> FigureAxes:
    """Plot the histogram of the files' compression ratios, with mean and median.

    A file's ratio is the uncompressed / compressed size of the distinct
    stored baskets its chunks read (above 1 when compression helps), as
    uproot's ``TTree.compression_ratio``. Unit: dimensionless ratio on
    x, files on y.

    Reads ``compression_ratios`` (one per file; None values are left out).
    """
    ratios = _per_file(metrics, "compression_ratios")
    fig, ax = new_figure(figsize)
    xlabel = "compression ratio (uncompressed / compressed bytes)"
    draw_distribution(ax, ratios, bins, xlabel, "", "files", title)
    return fig, ax


@figure(
    figsize=(10, 6), title="Bytes Read Percentage Distribution", needs="bytes_read_percent_per_file"
)
def plot_data_access_percentage(
    metrics: MetricsLike, figsize: Size, title: str, bins: int = 20
) -> FigureAxes:
    """Plot the histogram of the share of each file's bytes that was read.

    A file's share is the compressed size of the baskets its chunks read over
    the file's tree size, in percent, with the mean and median. The x axis
    ends at 110 % of the largest share, capped at 100 % unless a share is
    higher (a basket shared by two chunks counts twice). Unit: % of the file
    on x, files on y.

    Reads ``bytes_read_percent_per_file`` (%; None values are left out).
    """
    shares = _per_file(metrics, "bytes_read_percent_per_file")
    fig, ax = new_figure(figsize)
    if draw_distribution(ax, shares, bins, "bytes read (% of the file)", "%", "files", title):
        peak = float(shares.max())
        ax.set_xlim(0, max(min(100.0, 1.1 * peak), 1.05 * peak) if peak > 0 else 1.0)
    return fig, ax


def _chunks_with(chunk_metrics: Any, fields: tuple[str, ...]) -> list[Mapping[str, Any]]:
    """The records (failed included) that have every field, in start order."""
    records = chunk_records(chunk_metrics)
    kept = [r for r in records if all(has_number(r, f) for f in fields)]
    if not kept:
        names = " and ".join(repr(f) for f in fields)
        raise ValueError(f"no chunk record has {names} to plot")
    return in_start_order(kept)


def _dataset_legend(ax: Axes, datasets: list[str], extra: list[Any]) -> None:
    """A legend with one color patch per dataset, after the ``extra`` handles."""
    patches = [Patch(color=COLORS[i % len(COLORS)], label=d) for i, d in enumerate(datasets)]
    legend(ax, handles=[*extra, *patches])


#: Up to this many chunks the per-chunk figures draw a bar per chunk; beyond it, one
#: filled step line per series with the same values, drawn in constant time.
MAX_CHUNK_BARS = 1000


def _chunk_steps(ax: Axes, values: np.ndarray, **style: Any) -> None:
    """Per-chunk values as one filled step polygon, chunk i spanning [i - 0.5, i + 0.5].

    A collection, not a patch: matplotlib sizes the axes from a collection's
    vertices at once, but walks a patch's outline segment by segment.
    """
    edges = np.arange(len(values) + 1) - 0.5
    top = np.column_stack([np.repeat(edges, 2)[1:-1], np.repeat(values, 2)])
    outline = np.vstack([[edges[0], 0.0], top, [edges[-1], 0.0]])
    ax.add_collection(PolyCollection([outline], linewidth=0, **style))
    ax.autoscale_view()


@figure(figsize=(12, 6), title="Branches Accessed Per Chunk")
def plot_branch_access_per_chunk(
    chunk_metrics: ChunkRecords, figsize: Size, title: str
) -> FigureAxes:
    """Plot the number of branches each chunk read, one bar per chunk.

    Chunks are in the order they started, failed ones included (they read
    too); bars are colored by dataset, and a dashed line marks the mean.
    Beyond :data:`MAX_CHUNK_BARS` chunks, each dataset is one filled step
    line of the same values. Unit: branches.

    Reads ``num_branches_accessed``, ``dataset`` and ``t_start``.

    Raises
    ------
    ValueError
        If there are no chunk records or none has ``num_branches_accessed``.
    """
    records = _chunks_with(chunk_metrics, ("num_branches_accessed",))
    branches = np.array([r["num_branches_accessed"] for r in records], dtype=float)
    datasets = sorted({str(r.get("dataset")) for r in records})
    index = np.array([datasets.index(str(r.get("dataset"))) for r in records])
    fig, ax = new_figure(figsize)
    if len(records) > MAX_CHUNK_BARS:
        for i in range(len(datasets)):
            _chunk_steps(ax, np.where(index == i, branches, 0.0), facecolor=COLORS[i % len(COLORS)])
    else:
        colors = [COLORS[i % len(COLORS)] for i in index]
        ax.bar(np.arange(len(records)), branches, color=colors, label="branches")
    mean = float(branches.mean())
    line = ax.axhline(mean, color="red", linestyle="--", label=f"mean {mean:.3g} branches")
    label_axes(ax, "chunk (in start order)", "branches accessed", title, grid="y")
    ax.set_ylim(0, max(float(branches.max()), 1.0) * 1.1)
    count_axis(ax)
    count_axis(ax, "x")
    _dataset_legend(ax, datasets, [line])
    return fig, ax


@figure(figsize=(12, 6), title="Bytes Accessed Per Chunk (Compressed vs Uncompressed)")
def plot_bytes_accessed_per_chunk(
    chunk_metrics: ChunkRecords, figsize: Size, title: str
) -> FigureAxes:
    """Plot the compressed and uncompressed bytes each chunk read, side by side.

    Per chunk (in start order, failed ones included), two bars: the compressed
    and the uncompressed size of the baskets of its accessed branches that
    overlap its entry range; beyond :data:`MAX_CHUNK_BARS` chunks, two filled
    step lines of the same values, compressed over uncompressed. Unit: bytes,
    scaled to kiB, MiB or GiB (binary, as the report writes bytes) to suit the
    largest value; the y label names it.

    Reads ``accessed_bytes``, ``accessed_uncompressed_bytes`` and ``t_start``.

    Raises
    ------
    ValueError
        If there are no chunk records or none has both byte counts.
    """
    fields = ("accessed_bytes", "accessed_uncompressed_bytes")
    records = _chunks_with(chunk_metrics, fields)
    compressed, uncompressed = (np.array([r[f] for r in records], dtype=float) for f in fields)
    factor, unit = byte_unit(float(max(compressed.max(), uncompressed.max())))
    x = np.arange(len(records))
    fig, ax = new_figure(figsize)
    if len(records) > MAX_CHUNK_BARS:
        _chunk_steps(ax, uncompressed / factor, facecolor=COLORS[1], label="uncompressed")
        _chunk_steps(ax, compressed / factor, facecolor=COLORS[0], label="compressed")
    else:
        ax.bar(x - 0.2, compressed / factor, 0.4, color=COLORS[0], label="compressed")
        ax.bar(x + 0.2, uncompressed / factor, 0.4, color=COLORS[1], label="uncompressed")
    label_axes(ax, "chunk (in start order)", f"bytes accessed ({unit})", title, grid="y")
    count_axis(ax, "x")
    legend(ax)
    embedded = sum(1 for r in records if (r.get("accessed_embedded_bytes") or 0) > 0)
    if embedded:
        caption(
            ax,
            f"{embedded} chunk(s) read baskets embedded in the tree's metadata: they have no "
            "compressed size of their own and count 0 compressed bytes",
        )
    return fig, ax
