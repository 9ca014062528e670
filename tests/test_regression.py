"""Did it get slower? The cost per event of real runs compared, in Python and by the CLI.

Three runs of one analysis on two datasets: the second burns a fixed extra CPU
time per event in ``process()`` for dataset ``b`` only. Comparing the first with
the second marks ``b``'s ``user`` phase (and its whole cost), nothing of ``a`` and
no other phase; comparing the first with the third (the same analysis again)
marks nothing. ``roastcoffea compare --fail-above`` exits non-zero on the first
pair only.
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

from roastcoffea import MetricsCollector, RoastPlugin, compare_costs, regressions_above
from roastcoffea.cli import REGRESSION, main
from roastcoffea.demo.nanoaod import generate

cloudpickle.register_pickle_by_value(sys.modules[__name__])

TREE = "Events"
#: Extra CPU per event of dataset b in the slower run: several times the analysis's own.
EXTRA_US = 40.0


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
    # so the slower run's burn does not change what the other dataset's chunks share the
    # machine's caches and memory bandwidth with (two workers on two cores do: a chunk's
    # CPU per event then moves by tens of percent with its neighbour's work).
    with local_cluster(n_workers=1) as cluster, Client(cluster) as client:
        return _run_three(client, tmp_path_factory)


def _run_three(client: Client, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    client.register_plugin(RoastPlugin())
    data = tmp_path_factory.mktemp("regression-data")
    paths = generate(data, 40000, 2, compression="lz4:1", basket_events=2500, processes=1)
    fileset = {name: {"files": {str(path): TREE}} for name, path in zip("ab", paths, strict=True)}
    saved = tmp_path_factory.mktemp("regression-runs")
    warn = NanoAODSchema.warn_missing_crossrefs
    NanoAODSchema.warn_missing_crossrefs = False
    out: dict[str, Any] = {}
    try:
        # The first run on fresh workers pays imports and first-use caches: a warm-up.
        runs = (("warm-up", 0.0), ("before", 0.0), ("slower", EXTRA_US), ("again", 0.0))
        for name, extra in runs:
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
            out[name] = mc.get_metrics()
            mc.save_measurement(saved, name)
    finally:
        NanoAODSchema.warn_missing_crossrefs = warn
    out["saved"] = saved
    return out


def test_the_extra_cost_is_marked_in_that_dataset_s_user_phase_only(
    runs: dict[str, Any],
) -> None:
    changes = compare_costs(runs["before"], runs["slower"])
    marked = {(c.dataset, c.phase) for c in changes if c.marked}
    assert marked == {("b", "user"), ("b", "all")}, changes
    user = next(c for c in changes if (c.dataset, c.phase) == ("b", "user"))
    assert user.regression and user.low > 0
    # The burn is thread CPU inside process(): at least EXTRA_US more per event.
    assert user.after_us - user.before_us >= EXTRA_US
    assert {c.dataset for c in changes} == {"a", "b"}
    assert regressions_above(changes, 50.0)


def test_the_same_analysis_twice_marks_nothing(runs: dict[str, Any]) -> None:
    changes = compare_costs(runs["before"], runs["again"])
    assert changes and not [c for c in changes if c.marked], changes
    assert regressions_above(changes, 0.0) == []


def test_compare_fails_above_the_limit_on_the_slower_run_only(
    runs: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    saved: Path = runs["saved"]
    before, slower, again = (str(saved / name) for name in ("before", "slower", "again"))
    assert main(["compare", before, slower, "--fail-above", "50"]) == REGRESSION
    printed = capsys.readouterr().out
    assert "CPU Cost per Event" in printed
    (verdict,) = [line for line in printed.splitlines() if line.startswith("slower by more")]
    assert verdict.startswith("slower by more than 50%: ") and "slower: b user +" in verdict
    assert " a " not in verdict
    assert main(["compare", before, again, "--fail-above", "50"]) == 0
    assert main(["compare", before, slower]) == 0  # without the gate, a report only
