"""Figures of the processor phases: the chunk timeline, shares per dataset, the worker heatmap."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.collections import PolyCollection
from matplotlib.patches import Patch

from roastcoffea.plots._common import Clock, figure, legend, new_figure, require, require_key
from roastcoffea.plots._types import FigureAxes, MetricsLike, Size

#: Phases in drawing order, each with its color.
PHASE_COLORS = {
    "open": "#8c564b",
    "read": "#d62728",
    "decompress": "#ff7f0e",
    "interpret": "#bcbd22",
    "user": "#2ca02c",
    "output": "#9467bd",
    "other": "#7f7f7f",
}

PhaseRecords = Sequence[Mapping[str, Any]]


def _phase_legend(ax: Any, phases: Sequence[str]) -> None:
    handles = [Patch(color=PHASE_COLORS[p], label=p) for p in phases]
    legend(ax, handles=handles)


def _timed(records: PhaseRecords) -> list[Mapping[str, Any]]:
    return [
        r
        for r in records
        if isinstance(r.get("wall"), Mapping)
        and isinstance(r.get("t_start"), (int, float))
        and isinstance(r.get("elapsed"), (int, float))
    ]


@figure(figsize=(12, 6), title="Chunk Phase Timeline")
def plot_phase_timeline(
    phase_records: PhaseRecords,
    figsize: Size,
    title: str,
    *,
    origin: float | None = None,
    threads: Mapping[str, int] | None = None,
) -> FigureAxes:
    """Plot every processor task as a bar on its worker thread's lane, split into its phases.

    One lane per (worker, thread); a task's bar spans its compute time (Dask's
    start of the task to start + ``elapsed``), in seconds since the block's start.
    The bar is divided into its phases in a fixed order (open, read,
    decompress, interpret, user, output, other), each as long as its wall
    time: the segments show how much of the task each phase took, not when
    it happened. With ``threads``, a worker's threads that ran no processor task keep
    their lane, empty and marked idle. Unit: seconds.

    Parameters
    ----------
    phase_records : list of dict
        ``metrics["raw_phase_records"]``; reads ``worker``, ``thread``,
        ``t_start``, ``elapsed`` and ``wall``.
    threads : mapping, optional
        ``{worker: threads}`` of every worker of the run (the largest of its
        ``tracking_data["worker_cores"]``).

    Raises
    ------
    ValueError
        If no record has a start, an elapsed time and phases.
    """
    records = require(_timed(phase_records), "phase record with times")
    lanes = _lanes(records, threads or {})
    lane_of = {(worker, thread): i for i, (worker, thread, _) in enumerate(lanes)}
    clock = Clock.of(origin, [r["t_start"] for r in records])
    # Segments as arrays, one collection per phase, however many tasks: drawing
    # stays fast (a patch per segment would take minutes for 10^5 tasks).
    rows = np.array([lane_of[str(r.get("worker")), int(r.get("thread") or 0)] for r in records])
    starts = clock([r["t_start"] for r in records])
    widths = np.array(
        [[_seconds(r["wall"].get(phase)) for phase in PHASE_COLORS] for r in records]
    ).reshape(len(records), len(PHASE_COLORS))
    lefts = starts[:, None] + np.cumsum(widths, axis=1) - widths
    fig, ax = new_figure(figsize)
    for k, phase in enumerate(PHASE_COLORS):
        drawn = widths[:, k] > 0
        x0, x1 = lefts[drawn, k], lefts[drawn, k] + widths[drawn, k]
        y0, y1 = rows[drawn] - 0.35, rows[drawn] + 0.35
        boxes = np.stack([np.column_stack(c) for c in ((x0, y0), (x0, y1), (x1, y1), (x1, y0))], 1)
        ax.add_collection(PolyCollection(list(boxes), facecolors=PHASE_COLORS[phase], linewidth=0))
    ax.set_xlim(min(0.0, float(starts.min())), float(np.max(starts + widths.sum(axis=1))) * 1.01)
    ax.set_ylim(len(lanes) - 0.5, -0.5)
    ax.set_yticks(range(len(lanes)), [label for _, _, label in lanes], fontsize="small")
    ax.set_xlabel(clock.label)
    ax.set_title(title)
    ax.grid(True, alpha=0.3, axis="x")
    _phase_legend(ax, list(PHASE_COLORS))
    return fig, ax


def _seconds(value: Any) -> float:
    """A phase's wall seconds, 0 when unmeasured (None) or not a number."""
    return float(value) if isinstance(value, (int, float)) and value > 0 else 0.0


#: The thread of an idle lane (a worker's thread that ran no processor task).
IDLE = -1


def _lanes(
    records: list[Mapping[str, Any]], threads: Mapping[str, int]
) -> list[tuple[str, int, str]]:
    """``(worker, thread, label)`` of every lane: each worker's threads that ran a task,
    then, up to its ``threads``, idle ones; workers in address order."""
    ran: dict[str, list[int]] = {str(w): [] for w in threads}
    for record in records:
        ran.setdefault(str(record.get("worker")), [])
    for worker, thread in sorted(
        {(str(r.get("worker")), int(r.get("thread") or 0)) for r in records}
    ):
        ran[worker].append(thread)
    names = _worker_names(list(ran))
    lanes = []
    for worker in sorted(ran):
        used = ran[worker]
        count = max(len(used), int(threads.get(worker, 0)))
        for rank in range(count):
            thread = used[rank] if rank < len(used) else IDLE - rank
            idle = " (idle)" if rank >= len(used) else ""
            rank_text = f" t{rank}" if count > 1 else ""
            lanes.append((worker, thread, f"{names[worker]}{rank_text}{idle}"))
    return lanes


def _worker_names(workers: list[str]) -> dict[str, str]:
    """Each worker's port (its host too when ports repeat)."""
    ports = {w.rsplit(":", 1)[-1] for w in workers}
    return {
        w: f":{w.rsplit(':', 1)[-1]}" if len(ports) == len(workers) else w.split("://", 1)[-1]
        for w in workers
    }


def _share_matrix(table: Mapping[str, Mapping[str, float]]) -> tuple[list[str], list[str], Any]:
    """Rows, phases and the % share of each phase per row."""
    rows = sorted(table)
    phases = [p for p in PHASE_COLORS if any(p in table[r] for r in rows)]
    matrix = np.array([[float(table[r].get(p) or 0.0) for p in phases] for r in rows])
    totals = matrix.sum(axis=1, keepdims=True)
    return (
        rows,
        phases,
        100.0 * np.divide(matrix, totals, where=totals > 0, out=np.zeros_like(matrix)),
    )


@figure(figsize=(10, 5), title="Processor Phases per Dataset", needs="phase_per_dataset")
def plot_phase_shares_per_dataset(metrics: MetricsLike, figsize: Size, title: str) -> FigureAxes:
    """Plot the share of each phase in each dataset's processor time, one stacked bar per dataset.

    Unit: % of the dataset's summed task compute time.

    Reads ``phase_per_dataset`` (``{dataset: {phase: seconds}}``).
    """
    table = require_key(metrics, "phase_per_dataset", "metrics")
    datasets, phases, shares = _share_matrix(table)
    fig, ax = new_figure(figsize)
    left = np.zeros(len(datasets))
    for j, phase in enumerate(phases):
        ax.barh(datasets, shares[:, j], left=left, color=PHASE_COLORS[phase], label=phase)
        left += shares[:, j]
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of processor time (%)")
    ax.set_title(title)
    ax.invert_yaxis()
    _phase_legend(ax, phases)
    return fig, ax


@figure(figsize=(10, 5), title="Processor Phases per Worker", needs="phase_per_worker")
def plot_phase_heatmap(metrics: MetricsLike, figsize: Size, title: str) -> FigureAxes:
    """Plot the seconds of each phase on each worker as a heatmap, annotated with the share.

    Rows are workers, columns phases; the color is wall seconds, the text the
    phase's % of that worker's processor time. Unit: seconds.

    Reads ``phase_per_worker`` (``{worker: {phase: seconds}}``).
    """
    table = require_key(metrics, "phase_per_worker", "metrics")
    workers, phases, shares = _share_matrix(table)
    seconds = np.array([[float(table[w].get(p) or 0.0) for p in phases] for w in workers])
    fig, ax = new_figure(figsize)
    image = ax.imshow(seconds, aspect="auto", cmap="viridis")
    fig.colorbar(image, ax=ax, label="wall time (s)")
    ax.set_xticks(range(len(phases)), phases)
    ax.set_yticks(range(len(workers)), workers, fontsize="small")
    for i in range(len(workers)):
        for j in range(len(phases)):
            light = seconds[i, j] < 0.6 * seconds.max()
            ax.text(
                j,
                i,
                f"{shares[i, j]:.1f}%",
                ha="center",
                va="center",
                color="white" if light else "black",
                fontsize="small",
            )
    ax.set_title(title)
    return fig, ax
