"""Did a change make the analysis slower? Cost per event of two runs, with an interval.

For each dataset and phase both runs measured, the change of the median chunk's
CPU cost per event (``100 * (after / before - 1)``; a chunk's cost is its CPU
seconds in the phase over its events) and a percentile bootstrap interval: the
chunks of each run are resampled with replacement, independently, and the change
recomputed :data:`RESAMPLES` times (seeded: the same inputs give the same
interval). The median chunk, not the total: one chunk stalled by a garbage
collection or a cold cache must not mark a dataset.

A change is *marked* when its interval excludes zero, it is at least
``min_change`` percent either way (:data:`MIN_CHANGE_PERCENT` by default), and
the phase holds at least :data:`MIN_SHARE_PERCENT` of the dataset's cost in one
of the runs. The chunks' spread is the only noise the interval sees, while two
runs of one analysis on a shared machine differ by more: on two busy cores the
test's analysis moved by up to 8% in a phase with an interval of ±2%, and a
chunk's CPU per event by tens of percent with what the neighbouring core ran
(caches, memory bandwidth). A phase of a few microseconds moves by its whole size.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

import roastcoffea.phase_vocabulary as vocab
from roastcoffea.metrics.cost import ALL, ChunkCosts, chunk_costs, per_event_us

RESAMPLES = 2000
LEVEL = 0.95
MIN_CHANGE_PERCENT = 20.0
MIN_SHARE_PERCENT = 5.0


@dataclass(frozen=True)
class CostChange:
    """The change of one dataset's cost per event in one phase (``"all"``: every phase).

    ``before_us`` and ``after_us`` are the median chunk's CPU microseconds per
    event; ``low`` and ``high`` bound the change at :data:`LEVEL`, None (with
    ``note``) when a run has fewer than two chunks of the dataset.
    """

    dataset: str
    phase: str
    before_us: float
    after_us: float
    change_percent: float
    low: float | None
    high: float | None
    marked: bool
    note: str

    @property
    def regression(self) -> bool:
        """A marked slow-down."""
        return self.marked and self.change_percent > 0


def compare_costs(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
    min_change: float = MIN_CHANGE_PERCENT,
) -> list[CostChange]:
    """The change of the cost per event of every dataset and phase both runs measured.

    Parameters
    ----------
    before, after : mapping
        Metrics dictionaries (``raw_phase_records`` is what is read).
    resamples : int
        Bootstrap resamples.
    seed : int
        Seed of the resampling.
    min_change : float
        The smallest change, in percent either way, that is marked.

    Returns
    -------
    list of CostChange
        Sorted by dataset, then phase (``"all"`` first).

    Raises
    ------
    ValueError
        When a run has no phase records with entry ranges (measured with
        ``RoastPlugin(phases=False)``, or before phases existed).
    """
    costs = [_costs(metrics, name) for metrics, name in ((before, "before"), (after, "after"))]
    rng = np.random.default_rng(seed)
    changes = []
    for dataset, phase in sorted(set(costs[0]) & set(costs[1]), key=_order):
        shares = [_share(c, dataset, phase) for c in costs]
        change = _change(costs[0][dataset, phase], costs[1][dataset, phase], rng, resamples)
        if change is not None:
            changes.append(_marked(dataset, phase, *change, max(shares), min_change))
    return changes


def regressions_above(changes: list[CostChange], percent: float) -> list[CostChange]:
    """The marked slow-downs larger than ``percent``."""
    return [c for c in changes if c.regression and c.change_percent > percent]


def _costs(metrics: Mapping[str, Any], name: str) -> ChunkCosts:
    costs = chunk_costs(metrics.get("raw_phase_records") or [])
    if not costs:
        why = (metrics.get("unavailable") or {}).get("raw_phase_records", "none recorded")
        raise ValueError(f"the {name} run has no phase records to compare costs with: {why}")
    return costs


def _order(key: tuple[str, str]) -> tuple[str, int]:
    dataset, phase = key
    return dataset, -1 if phase == ALL else _PHASE_ORDER.get(phase, len(_PHASE_ORDER))


def _share(costs: ChunkCosts, dataset: str, phase: str) -> float:
    whole = per_event_us(costs.get((dataset, ALL), []))
    part = per_event_us(costs.get((dataset, phase), []))
    return 100.0 * part / whole if part is not None and whole else 0.0


def _change(
    before: list[tuple[float, int]],
    after: list[tuple[float, int]],
    rng: np.random.Generator,
    resamples: int,
) -> tuple[float, float, float, float | None, float | None] | None:
    costs = [_per_chunk_us(chunks) for chunks in (before, after)]
    if any(c.size == 0 for c in costs):
        return None
    b, a = (float(np.median(c)) for c in costs)
    if b <= 0:
        return None
    change = 100.0 * (a / b - 1.0)
    if min(c.size for c in costs) < 2:
        return b, a, change, None, None
    medians = [_resampled(c, rng, resamples) for c in costs]
    with np.errstate(divide="ignore", invalid="ignore"):
        samples = 100.0 * (medians[1] / medians[0] - 1.0)
    samples = samples[np.isfinite(samples)]
    tail = 100.0 * (1.0 - LEVEL) / 2.0
    low, high = np.percentile(samples, [tail, 100.0 - tail])
    return b, a, change, float(low), float(high)


def _per_chunk_us(chunks: list[tuple[float, int]]) -> np.ndarray:
    """Each chunk's CPU microseconds per event (chunks without events left out)."""
    return np.array([1e6 * s / n for s, n in chunks if n > 0])


def _resampled(costs: np.ndarray, rng: np.random.Generator, n: int) -> np.ndarray:
    """The median of ``n`` resamples of the chunks' costs (with replacement)."""
    picks = rng.integers(0, costs.size, size=(n, costs.size))
    return np.median(costs[picks], axis=1)


def _marked(
    dataset: str,
    phase: str,
    before: float,
    after: float,
    change: float,
    low: float | None,
    high: float | None,
    share: float,
    min_change: float,
) -> CostChange:
    if low is None or high is None:
        note, marked = "fewer than two chunks in a run: no interval", False
    elif low <= 0 <= high:
        note, marked = "the interval holds zero", False
    elif abs(change) < min_change:
        note, marked = f"under {min_change:g}%: within run-to-run noise", False
    elif share < MIN_SHARE_PERCENT:
        note, marked = f"the phase is under {MIN_SHARE_PERCENT:g}% of the dataset's cost", False
    else:
        note, marked = "slower" if change > 0 else "faster", True
    return CostChange(dataset, phase, before, after, change, low, high, marked, note)


_PHASE_ORDER = {p: i for i, p in enumerate(vocab.PHASES)}
