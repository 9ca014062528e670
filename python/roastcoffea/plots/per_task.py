"""Dask's fine performance metrics per task prefix: CPU vs non-CPU, spill reads, overheads.

The input is ``metrics["raw_span_metrics"]``: ``{(context, prefix, activity,
unit): value}``. Only the contexts that carry a task prefix (``execute`` and
``p2p``) count, and each activity is read in one unit only (seconds for time,
bytes for disk reads), so ``disk-read`` seconds, counts and bytes never mix.
"""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes

from roastcoffea.plots._common import COLORS, figure, label_axes, legend, new_figure, require
from roastcoffea.plots._types import FigureAxes, Size, SpanMetrics
from roastcoffea.units import byte_unit

#: Contexts whose keys name a task prefix.
_CONTEXTS = ("execute", "p2p")


def _by_prefix(
    span_metrics: SpanMetrics, activities: tuple[str, ...], unit: str
) -> dict[str, dict[str, float]]:
    """``{prefix: {activity: value}}`` of ``activities`` in ``unit``, largest prefix first.

    Keys are ``(context, prefix, activity, unit)``, or roastcoffea 0.1.2's
    ``(context, prefix, activity)``, whose value is taken in the unit asked for (0.1.2
    read every key that way); other keys cannot name a prefix and are skipped. Raises
    ValueError when ``span_metrics`` is empty, has no such key at all, or has none of
    the activities in ``unit``.
    """
    span_metrics = require(span_metrics, "span metrics (metrics['raw_span_metrics'])")
    keys = [key for key in span_metrics if isinstance(key, tuple) and len(key) in (3, 4)]
    if not keys:
        raise ValueError(
            "span_metrics keys must be (context, prefix, activity, unit) tuples, "
            f"not e.g. {next(iter(span_metrics))!r}"
        )
    table: dict[str, dict[str, float]] = {}
    for key in keys:
        context, prefix, activity, key_unit = key if len(key) == 4 else (*key, unit)
        value = span_metrics[key]
        wanted = context in _CONTEXTS and prefix != "N/A" and activity in activities
        if wanted and key_unit == unit and value is not None:
            row = table.setdefault(str(prefix), dict.fromkeys(activities, 0.0))
            row[activity] += float(value)
    if not table:
        names = ", ".join(repr(a) for a in activities)
        raise ValueError(f"span_metrics has no {names} activity in {unit!r} to plot")
    return dict(sorted(table.items(), key=lambda item: (-sum(item[1].values()), item[0])))


#: The unit an activity is read in when none is asked for: bytes, then seconds.
_PREFERRED_UNITS = ("bytes", "seconds")


def extract_per_task_metrics(
    span_metrics: SpanMetrics, unit: str | None = None
) -> dict[str, dict[str, float]]:
    """``{prefix: {activity: value}}`` of the ``execute`` context, summed over workers.

    The function of roastcoffea 0.1.2's fine-metrics notebook. An activity is
    reported in several units (``disk-read`` in seconds, bytes and count);
    0.1.2 kept whichever came last. Here ``unit`` picks one; without it, each
    activity is read in bytes when it has them, else in seconds, else in its
    only unit.

    Parameters
    ----------
    span_metrics : mapping
        ``metrics["raw_span_metrics"]``: ``{(context, prefix, activity, unit): value}``.
    unit : str, optional
        Only this unit (e.g. ``"seconds"``).

    Returns
    -------
    dict
        ``{task_prefix: {activity: value}}``. A 0.1.2 key ``(context, prefix, activity)``
        has no unit: it counts in any unit asked for, and where it is the activity's only
        one; other keys are skipped.
    """
    values: dict[str, dict[str, dict[str, float]]] = {}
    for key, value in (span_metrics or {}).items():
        if not (isinstance(key, tuple) and len(key) in (3, 4)) or value is None:
            continue
        context, prefix, activity, key_unit = key if len(key) == 4 else (*key, unit or "")
        if context == "execute" and (unit is None or key_unit == unit):
            units = values.setdefault(str(prefix), {}).setdefault(str(activity), {})
            units[key_unit] = units.get(key_unit, 0.0) + float(value)
    return {
        prefix: {activity: _preferred(units) for activity, units in activities.items()}
        for prefix, activities in values.items()
    }


def _preferred(units: dict[str, float]) -> float:
    for unit in _PREFERRED_UNITS:
        if unit in units:
            return units[unit]
    return next(iter(units.values()))


def _prefix_axis(ax: Axes, prefixes: list[str], ylabel: str, title: str) -> None:
    """Task prefixes as x tick labels, the y label and the title."""
    ax.set_xticks(np.arange(len(prefixes)), prefixes, rotation=30, ha="right")
    label_axes(ax, "task prefix", ylabel, title, grid="y")


@figure(title="CPU vs Off-CPU Time per Task", figsize=(12, 6))
def plot_per_task_cpu_io(span_metrics: SpanMetrics, title: str, figsize: Size) -> FigureAxes:
    """Plot, per task prefix, the thread time on and off the CPU as paired bars.

    ``thread-cpu`` is the CPU time of the threads running the tasks;
    ``thread-noncpu`` is the rest of their wall time (I/O waits, GIL
    contention, sleeps). Both are summed over the ``execute`` and ``p2p``
    contexts; prefixes are sorted by total time. Unit: seconds.

    Parameters
    ----------
    span_metrics : mapping
        ``metrics["raw_span_metrics"]``; reads the ``thread-cpu`` and
        ``thread-noncpu`` activities in ``seconds``.

    Raises
    ------
    ValueError
        If ``span_metrics`` is empty or has neither activity in seconds.
    """
    table = _by_prefix(span_metrics, ("thread-cpu", "thread-noncpu"), "seconds")
    x = np.arange(len(table))
    fig, ax = new_figure(figsize)
    for offset, activity, label, color in (
        (-0.2, "thread-cpu", "CPU (thread-cpu)", COLORS[0]),
        (0.2, "thread-noncpu", "non-CPU (thread-noncpu)", COLORS[1]),
    ):
        heights = [row[activity] for row in table.values()]
        ax.bar(x + offset, heights, 0.4, color=color, label=label)
    _prefix_axis(ax, list(table), "thread time (s)", title)
    legend(ax)
    return fig, ax


@figure(title="Bytes Read per Task", figsize=(12, 6))
def plot_per_task_bytes_read(span_metrics: SpanMetrics, title: str, figsize: Size) -> FigureAxes:
    """Plot, per task prefix, the bytes Dask read back from its spill disk.

    Dask's ``disk-read`` activity in ``bytes``: task data spilled to disk and
    read back, not the ROOT files the analysis reads. Unit: bytes, scaled to
    kiB, MiB or GiB (binary, as the report writes bytes) to suit the largest
    value; the y label names it.

    Parameters
    ----------
    span_metrics : mapping
        ``metrics["raw_span_metrics"]``; reads the ``disk-read`` activity in
        ``bytes`` (its ``seconds`` and ``count`` keys are ignored).

    Raises
    ------
    ValueError
        If ``span_metrics`` is empty or has no ``disk-read`` in bytes (nothing
        was spilled and read back).
    """
    table = _by_prefix(span_metrics, ("disk-read",), "bytes")
    values = np.array([row["disk-read"] for row in table.values()])
    factor, unit = byte_unit(float(values.max()))
    fig, ax = new_figure(figsize)
    ax.bar(np.arange(len(table)), values / factor, 0.6, color=COLORS[2], label="disk-read")
    _prefix_axis(ax, list(table), f"spill read from disk ({unit})", title)
    return fig, ax


#: The two stacks of the overhead plot: (offset, [(activity, color), ...]).
_OVERHEAD_STACKS = (
    (-0.2, (("compress", COLORS[0]), ("decompress", COLORS[1]))),
    (0.2, (("serialize", COLORS[2]), ("deserialize", COLORS[3]))),
)


@figure(title="Compression & Serialization Overhead per Task", figsize=(12, 6))
def plot_per_task_overhead(span_metrics: SpanMetrics, title: str, figsize: Size) -> FigureAxes:
    """Plot, per task prefix, Dask's compression and serialization time as stacked bars.

    Two stacks per prefix: ``compress`` + ``decompress`` on the left,
    ``serialize`` + ``deserialize`` on the right (spill and peer-to-peer
    transfers), summed over the ``execute`` and ``p2p`` contexts. Unit: seconds.

    Parameters
    ----------
    span_metrics : mapping
        ``metrics["raw_span_metrics"]``; reads the ``compress``,
        ``decompress``, ``serialize`` and ``deserialize`` activities in
        ``seconds``.

    Raises
    ------
    ValueError
        If ``span_metrics`` is empty or has none of the four activities in
        seconds.
    """
    activities = tuple(name for _, stack in _OVERHEAD_STACKS for name, _ in stack)
    table = _by_prefix(span_metrics, activities, "seconds")
    x = np.arange(len(table))
    fig, ax = new_figure(figsize)
    for offset, stack in _OVERHEAD_STACKS:
        bottom = np.zeros(len(table))
        for activity, color in stack:
            heights = np.array([row[activity] for row in table.values()])
            ax.bar(x + offset, heights, 0.4, bottom=bottom, color=color, label=activity)
            bottom += heights
    _prefix_axis(ax, list(table), "time (s)", title)
    legend(ax)
    return fig, ax
