"""Where the processor tasks' samples went: an icicle graph of Dask's profile."""

from __future__ import annotations

from typing import Any

from matplotlib.patches import Patch

from roastcoffea.plots._common import COLORS, figure, legend, new_figure
from roastcoffea.plots._types import FigureAxes, Size

#: Frame colours by what the code is.
KIND_COLORS = {"root": "#7f7f7f", "user": COLORS[1], "input": COLORS[0], "library": "#bcbd22"}
KIND_NAMES = {
    "user": "the user's code",
    "input": "reading, building arrays",
    "library": "other libraries",
}
#: A frame's name is written when its box is at least this share of the width.
LABEL_SHARE = 0.06


def _frames(
    node: dict[str, Any], left: float, depth: int, out: list[tuple[dict[str, Any], float, int]]
) -> None:
    out.append((node, left, depth))
    for child in node["children"]:
        _frames(child, left, depth + 1, out)
        left += child["count"]


@figure(figsize=(12, 6), title="Processor Task Samples (Dask's Profiler)", needs="profile_tree")
def plot_profile_icicle(metrics: dict[str, Any], figsize: Size, title: str) -> FigureAxes:
    """An icicle graph: each frame a box as wide as its samples, its callees below it.

    Reads ``profile_tree`` (frames holding at least 1 % of the samples); colours
    say whose code a frame is: the user's, uproot's or coffea's (reading and
    building arrays), or another library's.
    """
    tree = metrics["profile_tree"]
    total = float(tree["count"])
    frames: list[tuple[dict[str, Any], float, int]] = []
    _frames(tree, 0.0, 0, frames)
    fig, ax = new_figure(figsize)
    for node, left, depth in frames:
        width = node["count"] / total
        ax.barh(
            depth,
            width,
            left=left / total,
            height=0.9,
            color=KIND_COLORS[node["kind"]],
            edgecolor="white",
            linewidth=0.5,
        )
        if width >= LABEL_SHARE:
            name = node["name"].split(" (", 1)[0]
            ax.text(
                (left + node["count"] / 2) / total,
                depth,
                name,
                ha="center",
                va="center",
                fontsize=7,
                clip_on=True,
            )
    depth_max = max(d for _, _, d in frames)
    ax.set_ylim(depth_max + 0.6, -0.6)
    ax.set_xlim(0, 1)
    ax.set_xlabel(f"share of the {int(total):,} samples (10 ms each by default)")
    ax.set_ylabel("call depth (frames)")
    ax.set_title(title)
    ax.xaxis.set_major_formatter(lambda x, _: f"{100 * x:.0f}%")
    ax.yaxis.get_major_locator().set_params(integer=True)
    handles = [Patch(color=KIND_COLORS[k], label=name) for k, name in KIND_NAMES.items()]
    legend(ax, handles=handles)
    return fig, ax
