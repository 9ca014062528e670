"""Where the processor tasks' samples went: an icicle graph of Dask's profile."""

from __future__ import annotations

from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.text import Text

from roastcoffea.plots._common import COLORS, figure, legend, new_figure
from roastcoffea.plots._types import FigureAxes, Size

#: Frame colours by what the code is.
KIND_COLORS = {"root": "#7f7f7f", "user": COLORS[1], "input": COLORS[0], "library": "#bcbd22"}
KIND_NAMES = {
    "user": "the user's code",
    "input": "reading, building arrays",
    "library": "other libraries",
}
#: A frame's name is written when its box is at least this share of the width, shortened
#: to fit it, and left out when fewer than SHORTEST characters would fit.
LABEL_SHARE = 0.02
SHORTEST = 4


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
    labels: list[tuple[Text, float]] = []
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
            text = ax.text(
                (left + node["count"] / 2) / total, depth, name, ha="center", va="center",
                fontsize=7, clip_on=True,
            )  # fmt: skip
            labels.append((text, width))
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
    _fit_labels(fig, ax, labels)
    return fig, ax


def _fit_labels(fig: Figure, ax: Axes, labels: list[tuple[Text, float]]) -> None:
    """Shorten each frame's name until it fits its box (a share of the axes' width), ending
    it with an ellipsis; a name that cannot keep :data:`SHORTEST` characters is left out.
    Measured on the laid-out figure; text and axes scale alike at any resolution."""
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    pixels = ax.get_window_extent(renderer).width
    for text, share in labels:
        room, name = share * pixels * 0.92, text.get_text()
        while text.get_window_extent(renderer).width > room and len(name) > SHORTEST:
            name = name[:-1]
            text.set_text(name.rstrip("._") + "…")
        if text.get_window_extent(renderer).width > room:
            text.remove()
