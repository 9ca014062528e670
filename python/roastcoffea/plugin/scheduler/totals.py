"""The running totals of the chunks, kept once as their records arrive on the scheduler.

Each task's :class:`~roastcoffea.plugin.protocol.RecordBatch` brings the
:class:`~roastcoffea.plugin.protocol.ChunkTotals` of its chunk records and its
:class:`~roastcoffea.plugin.protocol.PhaseEntry`; the intake adds them here, and the
three readers take what they show from the same numbers: the live stream (its deltas
of :attr:`RunningTotals.all`), the Prometheus export (per dataset, the duration
histogram) and the dashboard page (per dataset and per run). The phase seconds
themselves are in the aggregator's digest table (per worker, prefix and span); only
their split by dataset, which the digests do not carry, is kept here.

A chunk Dask computed twice counts twice here (a collector counts each work item
once). Datasets beyond ``max_datasets`` share the label :data:`FOLDED`; runs beyond
:data:`MAX_RUNS`, the least recently active first, are forgotten.
"""

from __future__ import annotations

import bisect
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import roastcoffea.phase_vocabulary as vocab
from roastcoffea.plugin.protocol import ChunkTotals
from roastcoffea.plugin.scheduler.rate_series import RateSeries

#: Label of the datasets beyond the bound.
FOLDED = "(other)"
#: Upper bounds (seconds) of the chunk duration histogram's buckets.
CHUNK_DURATION_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
#: Runs kept (the most recently active ones).
MAX_RUNS = 20


@dataclass
class Tally:
    """Chunks, their events and bytes read, and the seconds of their ``process()``."""

    chunks: int = 0
    events: int = 0
    bytes_read: int = 0
    seconds: float = 0.0

    def add(self, chunk: ChunkTotals) -> None:
        self.chunks += 1
        self.events += chunk.events
        self.bytes_read += chunk.bytes_read
        if chunk.duration is not None:
            self.seconds += chunk.duration


@dataclass
class RunTally(Tally):
    """A run's tally (its span's), when its first and latest records arrived, its events
    over time, and its collector's block wall time once the block has ended (None before)."""

    first: float = 0.0
    last: float = 0.0
    wall_time: float | None = None
    rate: RateSeries = field(default_factory=RateSeries)


@dataclass
class RunningTotals:
    """Every running total of the chunks the scheduler keeps (see the module docstring).

    Parameters
    ----------
    max_datasets : int
        Datasets with a label of their own; later ones count as :data:`FOLDED`.
    max_runs : int
        Runs kept.
    clock : callable
        The arrival clock of the runs' records.
    """

    max_datasets: int
    max_runs: int = MAX_RUNS
    clock: Callable[[], float] = time.time
    #: Every chunk since the plugin started.
    all: Tally = field(default_factory=Tally)
    datasets: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    #: Per run (span), the most recently active last.
    runs: dict[str, RunTally] = field(default_factory=dict)
    #: Wall seconds per phase of each dataset's measured tasks.
    dataset_phases: dict[str, dict[str, float]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(float))
    )
    #: Chunks per duration bucket (the last one is +Inf), and their Σ duration.
    buckets: list[int] = field(default_factory=lambda: [0] * (len(CHUNK_DURATION_BUCKETS) + 1))
    duration_sum: float = 0.0
    _labels: set[str] = field(default_factory=set)

    def add_chunk(self, span: str | None, chunk: ChunkTotals) -> None:
        """Count one chunk of the run of ``span`` (None: of no run)."""
        self.all.add(chunk)
        self.datasets[self.label(chunk.dataset)].add(chunk)
        if chunk.duration is not None:
            self.buckets[bisect.bisect_left(CHUNK_DURATION_BUCKETS, chunk.duration)] += 1
            self.duration_sum += chunk.duration
        if span is not None:
            run = self.run(span)
            run.add(chunk)
            run.rate.add(run.last, chunk.events)

    def add_phases(
        self,
        span: str,
        dataset: str | None,
        labels: Sequence[tuple[str, str]],
        values: Sequence[float],
    ) -> None:
        """Add one task's phase walls to its dataset's; its run was active now."""
        self.run(span)
        if dataset is None:
            return
        totals = self.dataset_phases[self.label(dataset)]
        for (activity, unit), value in zip(labels, values, strict=False):
            phase = vocab.PHASE_OF_ACTIVITY.get(activity)
            if phase is not None and unit == vocab.WALL:
                totals[phase] += value

    def end_run(self, span: str, wall_time: float) -> None:
        """The run of ``span`` ended: its block took ``wall_time`` seconds (its collector's
        ``wall_time``). A run that sent nothing is not kept."""
        tally = self.runs.get(span)
        if tally is not None:
            tally.wall_time = wall_time

    def label(self, dataset: str | None) -> str:
        """The dataset's label: its name while fewer than ``max_datasets`` have one."""
        name = str(dataset)
        if name in self._labels or len(self._labels) < self.max_datasets:
            self._labels.add(name)
            return name
        return FOLDED

    def run(self, span: str) -> RunTally:
        """The tally of the run of ``span``, made the most recently active; the least
        recently active beyond ``max_runs`` is forgotten."""
        now = self.clock()
        tally = self.runs.pop(span, None) or RunTally(first=now)
        tally.last = now
        self.runs[span] = tally
        if len(self.runs) > self.max_runs:
            del self.runs[next(iter(self.runs))]
        return tally
