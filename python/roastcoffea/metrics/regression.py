"""Did a change make the analysis slower? Cost per event of runs before and after, tested.

For each dataset and phase the runs measured, a run's cost is its median chunk's CPU
microseconds per event (a chunk's CPU seconds in the phase over its events: the
median, so that one chunk stalled by a garbage collection or a cold cache does not
move a run). The change is ``100 * (after / before - 1)`` of the geometric means of the
runs' costs on each side, tested on their logarithms:

- **several runs on a side**: the runs' spread is the noise, run-to-run variation
  (machine load, caches, the neighbouring cores) included. A comparison's variance is
  its own pooled within-side variance pulled halfway to the mean of all the
  comparisons' (its degrees of freedom doubled), so that three runs per side give a
  usable estimate; the test is Student's t on it;
- **one run on each side**: the runs' spread is not seen, only the chunks' (a bootstrap
  of each run's median, a normal test on it). Machine noise cannot be separated from a
  change then, and the comparison says so: a change is marked only at
  :data:`ONE_RUN_FLOOR_PERCENT` or more, above the change that comparisons of identical
  runs exceeded in 5 % of pairs on the development machine with its load changing
  between runs (bench/gate_rates.py; docs/guide.md, "A regression gate in CI").

Every comparison tested counts in a Holm-Bonferroni correction at the family-wise
level ``alpha``: the chance that a comparison of runs of one analysis marks anything
is at most ``alpha`` when the noise is what the test assumes. The interval shown is at
the level ``1 - alpha / tested``. A change is *marked* when its corrected test rejects
no change, it is at least ``min_change`` percent either way, and the phase holds at
least :data:`MIN_SHARE_PERCENT` of the dataset's cost on one side; only marked changes
fail a gate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import roastcoffea.phase_vocabulary as vocab
from roastcoffea.metrics.cost import ALL, ChunkCosts, chunk_costs

#: The family-wise false-alarm level of a comparison.
ALPHA = 0.05
#: The smallest change, in percent either way, that is marked.
MIN_CHANGE_PERCENT = 10.0
#: A phase under this share of its dataset's cost on both sides is not tested.
MIN_SHARE_PERCENT = 5.0
#: With one run per side, the smallest change marked, in percent either way: above the
#: largest change of any dataset and phase tested that 5 % of comparisons of identical
#: runs reached (65 %) on the 2-core development machine, its load changing between runs
#: (bench/gate_rates.py; docs/guide.md, "A regression gate in CI").
ONE_RUN_FLOOR_PERCENT = 70.0
#: Bootstrap resamples of a run's chunks (one run per side).
RESAMPLES = 2000


@dataclass(frozen=True)
class CostChange:
    """The change of one dataset's cost per event in one phase (``"all"``: every phase).

    ``before_us`` and ``after_us`` are the geometric means of the runs' median chunk
    CPU microseconds per event; ``low`` and ``high`` bound the change at the
    comparison's corrected level; ``p_value`` is Holm-adjusted.
    """

    dataset: str
    phase: str
    before_us: float
    after_us: float
    change_percent: float
    low: float
    high: float
    p_value: float
    marked: bool
    note: str

    @property
    def regression(self) -> bool:
        """A marked slow-down."""
        return self.marked and self.change_percent > 0


@dataclass(frozen=True)
class Comparison:
    """Runs before against runs after: every change tested, and how.

    ``noise`` is ``"runs"`` when the runs' spread is the noise, ``"chunks"`` with one run
    per side (and :data:`ONE_RUN_FLOOR_PERCENT`); ``note`` says what that means.
    """

    changes: list[CostChange]
    runs: tuple[int, int]
    tested: int
    alpha: float
    noise: str
    note: str

    def regressions_above(self, percent: float) -> list[CostChange]:
        """The marked slow-downs larger than ``percent``."""
        return regressions_above(self.changes, percent)


def compare_runs(
    before: Sequence[Mapping[str, Any]],
    after: Sequence[Mapping[str, Any]],
    *,
    alpha: float = ALPHA,
    min_change: float = MIN_CHANGE_PERCENT,
    seed: int = 0,
) -> Comparison:
    """Test the change of every dataset's and phase's cost per event, runs before against after.

    Parameters
    ----------
    before, after : sequence of mapping
        Metrics dictionaries, one per run (``raw_phase_records`` is what is read);
        runs of one side are repetitions of one analysis.
    alpha : float
        The family-wise false-alarm level, in (0, 1).
    min_change : float
        The smallest change, in percent either way, that is marked (>= 0).
    seed : int
        Seed of the bootstrap (one run per side): the same inputs, the same answer.

    Returns
    -------
    Comparison
        Its changes sorted by dataset, then phase (``"all"`` first).

    Raises
    ------
    ValueError
        For no runs on a side, a run without phase records with entry ranges
        (measured with ``RoastPlugin(phases=False)``), runs with no dataset and phase in
        common, or ``alpha`` or ``min_change`` out of range.
    """
    if not (isinstance(alpha, (int, float)) and 0.0 < alpha < 1.0):
        raise ValueError(f"alpha must be a number in (0, 1), not {alpha!r}")
    if not (isinstance(min_change, (int, float)) and math.isfinite(min_change) and min_change >= 0):
        raise ValueError(f"min_change must be a finite number >= 0, not {min_change!r}")
    sides = [_side(runs, name) for runs, name in ((before, "before"), (after, "after"))]
    keys = sorted(set.intersection(*(set(run) for side in sides for run in side)), key=_order)
    if not keys:
        raise ValueError("the runs have no dataset and phase in common: nothing to compare")
    tested = [
        k for k in keys if k[1] == ALL or max(_share(s, k) for s in sides) >= MIN_SHARE_PERCENT
    ]
    logs = [{k: np.log([_median_us(run[k]) for run in side]) for k in tested} for side in sides]
    counts = (len(sides[0]), len(sides[1]))
    if min(counts) >= 2:
        deltas, ses, df = _by_runs(logs, tested)
        noise, note = "runs", f"{counts[0]} and {counts[1]} runs: their spread is the noise"
    else:
        deltas, ses, df = _by_chunks(logs, sides, tested, np.random.default_rng(seed))
        noise = "chunks"
        min_change = max(min_change, ONE_RUN_FLOOR_PERCENT)
        note = (
            "one run on a side: the machine's run-to-run noise cannot be separated from a "
            f"change, so only changes of {min_change:g}% or more are marked (what identical "
            "runs reached on the development machine, docs/guide.md); give several runs "
            "per side to measure the noise"
        )
    p_values = _holm([_two_sided_p(d / s, df) for d, s in zip(deltas, ses, strict=True)])
    half = _quantile(1.0 - alpha / (2 * len(tested)), df)
    changes = []
    for key, delta, se, p in zip(tested, deltas, ses, p_values, strict=True):
        changes.append(_change(key, logs, delta, se * half, p, alpha, min_change))
    return Comparison(changes, counts, len(tested), alpha, noise, note)


def compare_costs(
    before: Mapping[str, Any], after: Mapping[str, Any], **options: Any
) -> list[CostChange]:
    """:func:`compare_runs` of one run on each side: its changes."""
    return compare_runs([before], [after], **options).changes


def regressions_above(changes: list[CostChange], percent: float) -> list[CostChange]:
    """The marked slow-downs larger than ``percent``."""
    return [c for c in changes if c.regression and c.change_percent > percent]


# ---- the runs ---------------------------------------------------------------------------


def _side(runs: Sequence[Mapping[str, Any]], name: str) -> list[ChunkCosts]:
    if not runs:
        raise ValueError(f"no run {name}")
    side = []
    for n, metrics in enumerate(runs):
        costs = chunk_costs(metrics.get("raw_phase_records") or [])
        costs = {k: chunks for k, chunks in costs.items() if _per_chunk_us(chunks).size}
        if not costs:
            why = (metrics.get("unavailable") or {}).get("raw_phase_records", "none recorded")
            raise ValueError(f"{name} run {n + 1} has no phase records to compare with: {why}")
        side.append(costs)
    return side


def _per_chunk_us(chunks: list[tuple[float, int]]) -> np.ndarray:
    """Each chunk's CPU microseconds per event (chunks without events left out)."""
    return np.array([1e6 * s / n for s, n in chunks if n > 0])


def _median_us(chunks: list[tuple[float, int]]) -> float:
    # A floor of a nanosecond per event: a phase that took no CPU has a logarithm too.
    return max(float(np.median(_per_chunk_us(chunks))), 1e-3)


def _share(side: list[ChunkCosts], key: tuple[str, str]) -> float:
    """The phase's share of its dataset's cost, in percent, over the side's runs."""
    dataset, _ = key
    part = sum(_median_us(run[key]) for run in side)
    whole = sum(_median_us(run[dataset, ALL]) for run in side if (dataset, ALL) in run)
    return 100.0 * part / whole if whole else 0.0


def _order(key: tuple[str, str]) -> tuple[str, int]:
    dataset, phase = key
    return dataset, -1 if phase == ALL else _PHASE_ORDER.get(phase, len(_PHASE_ORDER))


# ---- the noise --------------------------------------------------------------------------


def _by_runs(
    logs: list[dict[tuple[str, str], np.ndarray]], tested: list[tuple[str, str]]
) -> tuple[list[float], list[float], float]:
    """The changes, their standard errors and degrees of freedom from the runs' spread."""
    before, after = logs
    k, m = len(next(iter(before.values()))), len(next(iter(after.values())))
    own = [
        ((k - 1) * before[key].var(ddof=1) + (m - 1) * after[key].var(ddof=1)) / (k + m - 2)
        for key in tested
    ]
    pooled = float(np.mean(own))
    deltas = [float(after[key].mean() - before[key].mean()) for key in tested]
    ses = [math.sqrt((v + pooled) / 2 * (1 / k + 1 / m)) or 1e-12 for v in own]
    return deltas, ses, 2.0 * (k + m - 2)


def _by_chunks(
    logs: list[dict[tuple[str, str], np.ndarray]],
    sides: list[list[ChunkCosts]],
    tested: list[tuple[str, str]],
    rng: np.random.Generator,
) -> tuple[list[float], list[float], float]:
    """The changes and their standard errors with one run on a side: the chunks' spread
    (a bootstrap of the runs' medians; a side of several runs, their mean's). Infinite
    degrees of freedom (a normal test)."""
    deltas, ses = [], []
    for key in tested:
        deltas.append(float(logs[1][key].mean() - logs[0][key].mean()))
        variances = [
            float(np.mean([_bootstrap_sd(run[key], rng) ** 2 for run in side])) / len(side)
            for side in sides
        ]
        ses.append(math.sqrt(sum(variances)) or 1e-12)
    return deltas, ses, math.inf


def _bootstrap_sd(chunks: list[tuple[float, int]], rng: np.random.Generator) -> float:
    """The standard deviation of the log median chunk cost over bootstrap resamples."""
    costs = np.maximum(_per_chunk_us(chunks), 1e-3)
    if costs.size < 2:
        return math.inf
    picks = rng.integers(0, costs.size, size=(RESAMPLES, costs.size))
    return float(np.log(np.median(costs[picks], axis=1)).std())


# ---- the test ---------------------------------------------------------------------------


def _two_sided_p(t: float, df: float) -> float:
    from scipy import stats

    return float(2.0 * (stats.norm.sf(abs(t)) if math.isinf(df) else stats.t.sf(abs(t), df)))


def _quantile(q: float, df: float) -> float:
    from scipy import stats

    return float(stats.norm.ppf(q) if math.isinf(df) else stats.t.ppf(q, df))


def _holm(p_values: list[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (family-wise), in the input's order."""
    n, adjusted, running = len(p_values), [0.0] * len(p_values), 0.0
    for rank, i in enumerate(sorted(range(n), key=lambda i: p_values[i])):
        running = max(running, min(1.0, (n - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def _change(
    key: tuple[str, str],
    logs: list[dict[tuple[str, str], np.ndarray]],
    delta: float,
    half: float,
    p_value: float,
    alpha: float,
    min_change: float,
) -> CostChange:
    dataset, phase = key
    before, after = (float(np.exp(side[key].mean())) for side in logs)
    change = 100.0 * math.expm1(delta)
    low, high = 100.0 * math.expm1(delta - half), 100.0 * math.expm1(delta + half)
    if p_value >= alpha:
        note, marked = "no change beyond the noise", False
    elif abs(change) < min_change:
        note, marked = f"under {min_change:g}%", False
    else:
        note, marked = "slower" if change > 0 else "faster", True
    return CostChange(dataset, phase, before, after, change, low, high, p_value, marked, note)


_PHASE_ORDER = {p: i for i, p in enumerate(vocab.PHASES)}
