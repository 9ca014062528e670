"""A worker that cannot import roastcoffea computes, unmonitored and named as such.

The worker is a real ``dask worker`` process started from the command line in
an environment where importing roastcoffea fails as if it were not installed
(a ``sitecustomize`` puts a finder that refuses it first on ``sys.meta_path``,
ahead of the editable install's own finder; the nanny's worker process inherits
it through ``PYTHONPATH``).
"""

from __future__ import annotations

import html
import operator
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import cloudpickle
import pytest
from coffea import processor
from coffea.nanoevents import NanoAODSchema
from measured_run import CHUNKSIZE, MeasuredProcessor, cms_fileset
from rich.console import Console
from roast_testing import wait_for

from roastcoffea import MetricsCollector, RoastPlugin
from roastcoffea.config import seconds
from roastcoffea.plugin.protocol import PLUGIN_NAME, WORKER_STATE_HANDLER
from roastcoffea.plugin.worker.loader import _NAME, _STATE_HANDLER
from roastcoffea.report.answer import shortfall
from roastcoffea.report.html import render_report
from roastcoffea.report.summary import print_summary

#: sitecustomize of an environment without roastcoffea.
WITHOUT_ROASTCOFFEA = """
import sys

class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "roastcoffea":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
"""

pytestmark = pytest.mark.cluster

cloudpickle.register_pickle_by_value(sys.modules[__name__])

#: What the broken worker plugin's setup raises.
INJECTED = "injected setup failure"


def break_setup() -> None:
    """Make RoastWorkerPlugin.setup raise in this worker process."""
    from roastcoffea.plugin.worker.plugin import RoastWorkerPlugin

    def setup(self: Any, worker: Any) -> None:
        raise RuntimeError(INJECTED)

    RoastWorkerPlugin.setup = setup  # type: ignore[method-assign]


def test_the_loader_names_what_the_worker_plugin_uses() -> None:
    assert (_NAME, _STATE_HANDLER) == (PLUGIN_NAME, WORKER_STATE_HANDLER)


@pytest.mark.parametrize("nanny", [True, False], ids=["nanny", "no-nanny"])
def test_a_worker_without_roastcoffea_computes_unmonitored(
    make_cluster: Any, tmp_path: Path, nanny: bool
) -> None:
    cluster, client = make_cluster(n_workers=1)
    client.register_plugin(RoastPlugin())
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(WITHOUT_ROASTCOFFEA)
    command = [sys.executable, "-m", "distributed.cli.dask_worker", cluster.scheduler_address]
    command += ["--name", "bare", "--nthreads", "1", "--nanny" if nanny else "--no-nanny"]
    env = {**os.environ, "PYTHONPATH": str(site)}
    worker = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        info = wait_for(
            lambda: client.scheduler_info()["workers"], lambda w: len(w) == 2, timeout=60
        )
        bare = next(a for a, w in info.items() if w["name"] == "bare")
        monitored = next(a for a in info if a != bare)
        kinds = client.run(lambda dask_worker: type(dask_worker.plugins[PLUGIN_NAME]).__name__)
        assert kinds == {bare: "WorkerPluginLoader", monitored: "RoastWorkerPlugin"}
        with MetricsCollector(client, live=False) as mc:
            on_bare = client.map(operator.add, range(5), range(5), workers=[bare], pure=False)
            on_monitored = client.map(operator.mul, range(5), range(5), workers=[monitored])
            assert client.gather(on_bare) == [2 * i for i in range(5)]
            assert client.gather(on_monitored) == [i * i for i in range(5)]
        assert mc.collector_errors == []
        assert mc.run.flush_seconds < seconds("flush-timeout")  # not waited for
        assert [w["address"] for w in mc.run.departures.unmonitored] == [bare]
        assert "ModuleNotFoundError" in mc.run.departures.unmonitored[0]["reason"]
        # The scheduler still counts the bare worker's tasks; only monitored ones send digests.
        tasks = {row["worker"]: row["tasks"] for row in mc.snapshot["tasks"] if row["span"]}
        assert tasks[bare] == 5 and tasks[monitored] == 5
        digest_workers = {key[0] for key in mc.snapshot["digests"]}
        assert monitored in digest_workers and bare not in digest_workers
    finally:
        worker.terminate()
        worker.wait(timeout=60)


def test_a_worker_whose_plugin_setup_fails_is_named_and_its_chunks_accounted(
    make_cluster: Any, cms_data: Path
) -> None:
    _, client = make_cluster()
    broken, monitored = sorted(client.scheduler_info()["workers"])
    client.run(break_setup, workers=[broken])
    client.register_plugin(RoastPlugin())
    kinds = client.run(lambda dask_worker: type(dask_worker.plugins[PLUGIN_NAME]).__name__)
    assert kinds == {broken: "WorkerPluginLoader", monitored: "RoastWorkerPlugin"}
    # worker_affinity pins each work item to a worker by its hash, so both compute.
    runner = processor.Runner(
        executor=processor.DaskExecutor(client=client, status=False, worker_affinity=True),
        schema=NanoAODSchema,
        chunksize=CHUNKSIZE,
        savemetrics=True,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with MetricsCollector(client, live=False) as mc:
            _, report = runner(cms_fileset(cms_data), MeasuredProcessor(), treename="Events")
            mc.set_coffea_report(report)
    metrics = mc.get_metrics()
    [unmonitored] = metrics["unmonitored_workers"]
    assert unmonitored["address"] == broken
    assert f"RoastWorkerPlugin.setup failed: RuntimeError: {INJECTED}" in unmonitored["reason"]
    # The scheduler's own count of the processor tasks each worker ran.
    prefixes = set(metrics["processor_prefixes"])
    ran = {address: 0 for address in (broken, monitored)}
    for row in mc.snapshot["tasks"]:
        if row["span"] and row["prefix"] in prefixes:
            ran[row["worker"]] += row["tasks"]
    assert ran[broken] > 0 and sum(ran.values()) == report["chunks"]
    coverage = metrics["record_coverage"]
    assert coverage["chunks_reported"] == report["chunks"]
    assert coverage["chunks_recorded"] == ran[monitored] == metrics["num_chunks"]
    assert coverage["chunks_missing"] == ran[broken]
    assert coverage["events_reported"] == report["entries"]
    assert coverage["complete"] is False
    assert coverage["causes"][0].startswith(f"worker {broken} computed unmonitored")
    # The summary says it under the headline, the report in its alerts.
    console = Console(record=True, width=100)
    print_summary(metrics, console)
    said = " ".join(console.export_text().split())
    assert f"The records cover {ran[monitored]:,} of {report['chunks']:,} chunks" in said
    assert f"worker {broken} computed unmonitored" in said
    assert html.escape(shortfall(metrics) or "", quote=False) in render_report(metrics)
