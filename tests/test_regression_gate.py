"""The regression gate's false-alarm and detection rates, on runs of known noise.

Simulated runs (seeded, so every figure here is the same at every run of the suite): two
datasets of 20 chunks, each run's cost moved by a machine factor (log-normal, 18 % per
run: the spread bench/gate_rates.py measured between identical runs on the development
machine with its load changing), each chunk by its own (8 %). The gate's promise is
checked as a rate over many comparisons: identical runs are marked at most at the
family-wise level, a slow-down of one dataset is caught and the other dataset is not
named. The same on a real cluster is tests/test_regression.py; the rates on this machine
are bench/gate_rates.py's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from roastcoffea.metrics.regression import ALPHA, ONE_RUN_FLOOR_PERCENT, compare_runs

PHASES = {"open": 30.0, "interpret": 15.0, "user": 8.0, "other": 1.0}  # µs per event
CHUNKS, EVENTS = 20, 2500
RUN_NOISE, CHUNK_NOISE = math.log1p(0.18), math.log1p(0.08)


def run(rng: np.random.Generator, slower: dict[str, float] | None = None) -> dict[str, Any]:
    """One run's phase records; ``slower``: {dataset: factor} on its user phase."""
    machine = rng.normal(0.0, RUN_NOISE)
    records = []
    for dataset in ("a", "b"):
        for n in range(CHUNKS):
            chunk = rng.normal(0.0, CHUNK_NOISE)
            cpu = {p: us * EVENTS * 1e-6 * math.exp(machine + chunk) for p, us in PHASES.items()}
            if slower and dataset in slower:
                cpu["user"] *= slower[dataset]
            records.append(
                {
                    "dataset": dataset,
                    "file": f"{dataset}.root",
                    "entry_start": n * EVENTS,
                    "entry_stop": (n + 1) * EVENTS,
                    "cpu": cpu,
                }
            )
    return {"raw_phase_records": records}


def marked(before: list, after: list, **options: Any) -> set[tuple[str, str]]:
    changes = compare_runs(before, after, **options).changes
    return {(c.dataset, c.phase) for c in changes if c.marked}


@pytest.mark.parametrize("per_side", [3, 5])
def test_identical_runs_are_marked_at_most_at_the_family_wise_level(per_side: int) -> None:
    rng = np.random.default_rng(1)
    trials = 200
    alarms = sum(
        bool(marked([run(rng) for _ in range(per_side)], [run(rng) for _ in range(per_side)]))
        for _ in range(trials)
    )
    # The binomial's 99.9 % bound above ALPHA: a true rate at ALPHA stays under it.
    assert alarms / trials <= ALPHA + 3.1 * math.sqrt(ALPHA * (1 - ALPHA) / trials)


def test_one_dataset_slower_is_caught_and_the_other_is_not_named() -> None:
    rng = np.random.default_rng(2)
    trials, caught, named = 100, 0, 0
    for _ in range(trials):
        before = [run(rng) for _ in range(5)]
        # +30 % of dataset b's whole cost per event, all of it in its user phase.
        factor = 1 + 0.30 * sum(PHASES.values()) / PHASES["user"]
        found = marked(before, [run(rng, {"b": factor}) for _ in range(5)])
        caught += any(dataset == "b" for dataset, _ in found)
        named += any(dataset == "a" for dataset, _ in found)
    assert caught / trials >= 0.95
    assert named / trials <= ALPHA


def test_with_one_run_per_side_the_floor_holds_the_machine_s_noise() -> None:
    rng = np.random.default_rng(3)
    trials = 200
    alarms = sum(bool(marked([run(rng)], [run(rng)])) for _ in range(trials))
    assert alarms / trials <= ALPHA  # 18 % per run, under the floor
    slower = marked([run(rng)], [run(rng, {"b": 3.0})])
    assert ("b", "user") in slower and not {k for k in slower if k[0] == "a"}
    note = compare_runs([run(rng)], [run(rng)]).note
    assert "cannot be separated" in note and f"{ONE_RUN_FLOOR_PERCENT:g}%" in note


def test_the_level_and_the_floor_are_the_caller_s() -> None:
    rng = np.random.default_rng(4)
    before, after = [run(rng) for _ in range(3)], [run(rng, {"b": 1.5}) for _ in range(3)]
    strict = compare_runs(before, after, alpha=1e-9)
    assert strict.alpha == 1e-9 and not any(c.marked for c in strict.changes)
    assert all(0.0 <= c.p_value <= 1.0 for c in strict.changes)
    high = compare_runs(before, after, min_change=1000.0)
    assert not any(c.marked for c in high.changes)
    for bad in (0.0, 1.0, -0.1, math.nan):
        with pytest.raises(ValueError, match="alpha"):
            compare_runs(before, after, alpha=bad)
    with pytest.raises(ValueError, match="min_change"):
        compare_runs(before, after, min_change=math.inf)
