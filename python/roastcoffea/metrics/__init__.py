"""The metrics dictionary, computed from plain data (no Dask here).

:func:`compute_metrics` turns the collector's inputs — the span-filtered
snapshot of the plugin, the coffea report, the chunk records and the times of
the collector's block — into the metrics dictionary documented, key by key,
in docs/metrics.md. A value that cannot be measured is None and
``metrics["unavailable"][key]`` says why.

Examples
--------
>>> from roastcoffea.metrics import MetricsInputs, compute_metrics
>>> metrics = compute_metrics(MetricsInputs(snapshot, t0, t1, wall))  # doctest: +SKIP
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from roastcoffea.metrics import (
    chunks,
    cost,
    coverage,
    diagnosis,
    efficiency,
    fine,
    hot_lines,
    io,
    node,
    off_cpu,
    phases,
    reads,
    wall_split,
    workers,
    workflow,
)
from roastcoffea.metrics._util import Metrics

__all__ = ["MetricsInputs", "compute_metrics"]


@dataclass(frozen=True)
class MetricsInputs:
    """Everything the metrics are computed from.

    Attributes
    ----------
    snapshot : dict
        The plugin's snapshot for the collector's span and window (layout in
        docs/architecture.md): the scheduler keeps the rows of that span and its
        descendants only, so nothing here filters by span again.
    t_start, t_end : float
        The collector's window on the scheduler clock (epoch seconds).
    wall_time : float
        Seconds the collector's block took (``time.perf_counter``); 0 (not
        measured yet) makes every rate unavailable.
    coffea_report : dict, optional
        coffea's ``Runner(savemetrics=True)`` report (``entries``,
        ``bytesread``, ``processtime``, ``chunks``, ``columns``).
    custom_metrics : dict, optional
        ``{dataset: {"entries", "duration", "performance_counters":
        {"num_requested_bytes"}}}`` as in roastcoffea 0.1.2; merged per dataset
        (see docs/metrics.md).
    chunks : list of dict
        The chunk records of the span (``roastcoffea.records``), every
        execution; :func:`compute_metrics` counts each work item once.
    phases : list of dict
        The phase records of the span (``kind="phases"``), one per measured
        task execution.
    processor_prefixes : set of str, optional
        Explicit processor task prefixes; None: detected.
    detected_prefixes : set of str
        Prefixes the workers saw running coffea work items (prefix records).
    track_workers : bool
        Whether worker tracking was on; off, every worker metric is None.
    profiles : dict, optional
        Dask's profile of the processor prefixes in the window, ``{worker: {prefix:
        tree}}``, each tree as the workers cut it (Dask's layout with ``at``:
        :func:`roastcoffea.metrics.hot_lines.with_leaves` then ``pruned``); None when
        not taken, with ``profile_reason``.
    profile_reason : str, optional
        Why ``profiles`` is None.
    unmonitored : dict
        ``{worker: reason}`` of the workers that computed unmonitored in the window.
    records_lost : dict
        ``{"<kind>: <reason>": count}`` of the records the workers could not send.
    records_dropped : int, optional
        The run's records the scheduler's store dropped at its byte cap; None when
        not known (the cluster's count is then the cause named).

    Raises
    ------
    ValueError
        If ``wall_time`` is negative or not finite, or the window ends
        before it starts.
    """

    snapshot: dict[str, Any]
    t_start: float
    t_end: float
    wall_time: float
    coffea_report: dict[str, Any] | None = None
    custom_metrics: dict[str, Any] | None = None
    chunks: list[dict[str, Any]] = field(default_factory=list)
    phases: list[dict[str, Any]] = field(default_factory=list)
    processor_prefixes: set[str] | None = None
    detected_prefixes: set[str] = field(default_factory=set)
    track_workers: bool = True
    profiles: dict[str, dict[str, Any]] | None = None
    profile_reason: str | None = None
    unmonitored: dict[str, str] = field(default_factory=dict)
    records_lost: dict[str, int] = field(default_factory=dict)
    records_dropped: int | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.wall_time) and self.wall_time >= 0):
            raise ValueError(f"wall_time must be a number of seconds >= 0, not {self.wall_time!r}")
        if not self.t_end >= self.t_start:
            raise ValueError(
                f"the window ends ({self.t_end!r}) before it starts ({self.t_start!r})"
            )


def compute_metrics(inputs: MetricsInputs) -> dict[str, Any]:
    """Compute the metrics dictionary.

    Parameters
    ----------
    inputs : MetricsInputs

    Returns
    -------
    dict
        Every key of docs/metrics.md (roastcoffea 0.1.2 names included as
        aliases), and ``"unavailable"``: ``{key: reason}`` for each None.
    """
    once, extra = chunks.count_once(inputs.chunks)
    inputs = replace(inputs, chunks=once)
    out = Metrics()
    fine.compute(inputs, out)
    workers.compute(inputs, out)
    node.compute(inputs, out)
    workflow.compute(inputs, out)
    efficiency.compute(out)
    cost.compute(inputs, out)
    phases.compute(inputs, out)
    off_cpu.compute(inputs, out)
    wall_split.compute(inputs, out)
    reads.compute(inputs, out)
    hot_lines.compute(inputs, out)
    diagnosis.compute(out)
    chunks.compute(inputs, out, extra)
    coverage.compute(inputs, out)
    io.compute(inputs, out)
    return out.result()
