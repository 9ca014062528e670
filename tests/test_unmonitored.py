"""A worker that cannot import roastcoffea computes, unmonitored and named as such.

The worker is a real ``dask worker`` process started from the command line in
an environment where importing roastcoffea fails as if it were not installed
(a ``sitecustomize`` puts a finder that refuses it first on ``sys.meta_path``,
ahead of the editable install's own finder; the nanny's worker process inherits
it through ``PYTHONPATH``).
"""

from __future__ import annotations

import operator
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from roast_testing import wait_for

from roastcoffea import MetricsCollector, RoastPlugin
from roastcoffea.config import seconds
from roastcoffea.plugin.protocol import PLUGIN_NAME, WORKER_STATE_HANDLER
from roastcoffea.plugin.worker.loader import _NAME, _STATE_HANDLER

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
