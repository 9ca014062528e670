"""Did it get slower? The cost per event of real runs compared, in Python and by the CLI.

Runs of one analysis on two datasets, interleaved on one cluster: three *before*, three
*slower* (burning a fixed extra CPU time per event in ``process()`` for dataset ``b``
only) and three *again* (the same analysis as before). With three runs per side their
spread is the noise: before against slower marks ``b``'s ``user`` phase and nothing of
``a`` (``b``'s whole cost rises by the burn too, but whether that is marked depends on
how noisy the machine makes the other phases); before against again marks nothing. The
assertions that nothing is marked are made at a family-wise level of 0.001, so that a
suite run beside other work fails them at most once in a thousand runs, and the extra
cost is several times the user phase's own, so that it is caught whatever the machine
does. ``roastcoffea compare --fail-above`` exits non-zero on the slower runs only, and
refuses a threshold or a comparison that means nothing.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import awkward as ak
import cloudpickle
import pytest
from coffea import processor
from coffea.nanoevents import NanoAODSchema
from conftest import local_cluster
from distributed import Client

from roastcoffea import MetricsCollector, RoastPlugin, compare_costs, compare_runs
from roastcoffea.cli import REGRESSION, USAGE_ERROR, main
from roastcoffea.demo.nanoaod import generate

cloudpickle.register_pickle_by_value(sys.modules[__name__])

TREE = "Events"
#: Extra CPU per event of dataset b in the slower runs: several times the analysis's own.
EXTRA_US = 40.0
#: The family-wise level of the assertions that nothing is marked.
STRICT = 0.001
RUNS = 3


class Analysis(processor.ProcessorABC):
    """Reads jets and muons; burns ``extra_us`` of thread CPU per event of dataset b."""

    def __init__(self, extra_us: float = 0.0) -> None:
        self.extra_us = extra_us

    def process(self, events: Any) -> dict[str, Any]:
        total = float(ak.sum(events.Jet.pt)) + float(ak.sum(events.Muon.pt))
        if events.metadata["dataset"] == "b" and self.extra_us:
            end = time.thread_time() + self.extra_us * 1e-6 * len(events)
            while time.thread_time() < end:
                pass
        return {"sum": total}

    def postprocess(self, accumulator: Any) -> Any:
        return accumulator


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    # One single-threaded worker: the datasets' chunks run one after another on one core,
    # so the slower runs' burn does not change what the other dataset's chunks share the
    # machine's caches and memory bandwidth with.
    with local_cluster(n_workers=1) as cluster, Client(cluster) as client:
        return _run_all(client, tmp_path_factory)


def _run_all(client: Client, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    client.register_plugin(RoastPlugin())
    data = tmp_path_factory.mktemp("regression-data")
    paths = generate(data, 40000, 2, compression="lz4:1", basket_events=2500, processes=1)
    fileset = {name: {"files": {str(path): TREE}} for name, path in zip("ab", paths, strict=True)}
    saved = tmp_path_factory.mktemp("regression-runs")
    warn = NanoAODSchema.warn_missing_crossrefs
    NanoAODSchema.warn_missing_crossrefs = False
    out: dict[str, Any] = {kind: [] for kind in ("before", "slower", "again")}
    out["saved"] = saved
    try:
        # The first run on fresh workers pays imports and first-use caches: a warm-up.
        plan = [("warm-up", 0.0)] + [
            (kind, extra)
            for _ in range(RUNS)
            for kind, extra in (("before", 0.0), ("slower", EXTRA_US), ("again", 0.0))
        ]
        for n, (kind, extra) in enumerate(plan):
            runner = processor.Runner(
                executor=processor.DaskExecutor(client=client, status=False),
                schema=NanoAODSchema,
                chunksize=2500,
                savemetrics=True,
            )
            with MetricsCollector(client) as mc:
                _, report = runner(fileset, processor_instance=Analysis(extra), treename=TREE)
                mc.set_coffea_report(report)
            assert mc.collector_errors == []
            if kind != "warm-up":
                out[kind].append(mc.get_metrics())
                mc.save_measurement(saved, f"{kind}-{n}")
    finally:
        NanoAODSchema.warn_missing_crossrefs = warn
    return out


def marked(changes: list[Any]) -> set[tuple[str, str]]:
    return {(c.dataset, c.phase) for c in changes if c.marked}


def test_the_extra_cost_is_marked_in_that_dataset_s_user_phase_only(
    runs: dict[str, Any],
) -> None:
    comparison = compare_runs(runs["before"], runs["slower"], alpha=STRICT)
    assert comparison.noise == "runs" and comparison.runs == (RUNS, RUNS)
    found = marked(comparison.changes)
    assert ("b", "user") in found and {d for d, _ in found} == {"b"}, comparison.changes
    assert all(c.regression for c in comparison.changes if c.marked), comparison.changes
    # The burn is thread CPU inside process(): at least EXTRA_US per event in the slower
    # runs' user phase and whole cost. Not "EXTRA_US more than before": the rest of the
    # cost is another run's, and may come out lower by its noise.
    for phase in ("user", "all"):
        change = next(c for c in comparison.changes if (c.dataset, c.phase) == ("b", phase))
        assert change.after_us >= EXTRA_US and change.change_percent > 0, change
    user = next(c for c in comparison.changes if (c.dataset, c.phase) == ("b", "user"))
    assert user.low > 0
    assert {c.dataset for c in comparison.changes} == {"a", "b"}
    assert comparison.regressions_above(50.0)


def test_the_same_analysis_again_marks_nothing(runs: dict[str, Any]) -> None:
    comparison = compare_runs(runs["before"], runs["again"], alpha=STRICT)
    assert comparison.changes and marked(comparison.changes) == set(), comparison.changes
    assert comparison.regressions_above(0.0) == []


def test_one_run_per_side_says_it_cannot_separate_the_machine_and_still_sees_the_burn(
    runs: dict[str, Any],
) -> None:
    changes = compare_costs(runs["before"][0], runs["slower"][0])
    assert ("b", "user") in marked(changes)  # several times the analysis's cost
    note = compare_runs(runs["before"][:1], runs["slower"][:1]).note
    assert note.startswith("one run on a side: the machine's run-to-run noise cannot be")


def saved_runs(runs: dict[str, Any], kind: str) -> list[str]:
    return sorted(str(p) for p in runs["saved"].glob(f"{kind}-*"))


def test_compare_fails_above_the_limit_on_the_slower_runs_only(
    runs: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    before, slower, again = (saved_runs(runs, kind) for kind in ("before", "slower", "again"))
    strict = ["--alpha", str(STRICT)]
    assert main(["compare", *before, "--", *slower, "--fail-above", "50", *strict]) == REGRESSION
    printed = capsys.readouterr().out
    assert "CPU Cost per Event" in printed and "3 and 3 runs: their spread is the noise" in printed
    (verdict,) = [line for line in printed.splitlines() if line.startswith("slower by more")]
    assert verdict.startswith("slower by more than 50%: ") and ": b user +" in verdict
    assert " a " not in verdict
    assert main(["compare", *before, "--", *again, "--fail-above", "10", *strict]) == 0
    assert main(["compare", *before, "--", *slower]) == 0  # without the gate, a report only


@pytest.mark.parametrize("limit", ["nan", "-5", "inf"])
def test_compare_refuses_a_threshold_that_is_no_percent(
    runs: dict[str, Any], limit: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before, slower = saved_runs(runs, "before"), saved_runs(runs, "slower")
    assert main(["compare", before[0], slower[0], "--fail-above", limit]) == USAGE_ERROR
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("roastcoffea compare: error: --fail-above takes a finite percent")


def test_compare_with_nothing_in_common_is_one_line_and_status_2(
    runs: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = runs["before"][0] | {
        "raw_phase_records": [
            {**r, "dataset": "elsewhere"} for r in runs["before"][0]["raw_phase_records"]
        ]
    }
    from roastcoffea import save_measurement

    path = save_measurement(other, 1.0e9, 1.0e9 + 1, tmp_path, "elsewhere")
    before = saved_runs(runs, "before")[0]
    assert main(["compare", before, "--", str(path), "--fail-above", "10"]) == USAGE_ERROR
    (line,) = capsys.readouterr().err.splitlines()
    assert "compared nothing: the runs have no dataset and phase in common" in line
