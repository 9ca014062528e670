"""Clusters from a real dask-gateway-server, configured as docs/guide.md tells a facility.

The server (its local backend, behind its own proxy, on 127.0.0.1) is started here with the
guide's ``dask_gateway_config.py`` block (``gateway_server.py``). A user's gateway client asks
for two clusters:

* with the cluster option ``roastcoffea`` (on by default): the scheduler runs the preload
  before any client registers anything, and a collector finds the plugin pair it installed;
* with the option off: ``MetricsCollector(client)`` alone registers the pair.

On each, a coffea run on the CMS NanoAOD test files is exact against coffea's report, and
the scheduler's Prometheus series are read through the gateway's proxy.
"""

from __future__ import annotations

import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import awkward as ak
import cloudpickle
import pytest
from coffea import processor
from coffea_run import TREE, collected_run
from dask_gateway import BasicAuth, Gateway
from gateway_server import gateway_server

from roastcoffea import track_metrics
from roastcoffea.plugin.protocol import PLUGIN_NAME

pytestmark = pytest.mark.cluster
cloudpickle.register_pickle_by_value(sys.modules[__name__])

FILES = {"dy": "nano_dy.root", "dimuon": "nano_dimuon.root"}
CHUNKSIZE = 10


class Muons(processor.ProcessorABC):
    @track_metrics
    def process(self, events: Any) -> dict[str, Any]:
        return {"muon_pt": float(ak.sum(events.Muon.pt)), "events": len(events)}

    def postprocess(self, accumulator: Any) -> Any:
        return accumulator


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    with gateway_server(tmp_path_factory.mktemp("gateway")) as address:
        user = Gateway(address, auth=BasicAuth("physicist", "roast"))
        try:
            yield user
        finally:
            for cluster in user.list_clusters():
                user.stop_cluster(cluster.name)
            user.close()
            forget_loop(user)


def forget_loop(closed: Gateway) -> None:
    """A closed Gateway, made safe to collect: its ``__del__`` closes it again unless it
    has no loop runner, and a stopped runner raises on its loop (distributed >= 2024.8)."""
    del closed._loop_runner


def has_plugin(dask_scheduler: Any) -> bool:
    return PLUGIN_NAME in dask_scheduler.plugins


def measured_run(gateway: Gateway, cms_data: Path, **options: Any) -> dict[str, Any]:
    """A one-worker cluster with ``options``; a coffea run in a collector; its figures."""
    cluster = gateway.new_cluster(**options)
    try:
        cluster.scale(1)
        client = cluster.get_client()
        client.wait_for_workers(1, timeout=120)
        preloaded = client.run_on_scheduler(has_plugin)
        fileset = {d: {"files": {str(cms_data / f): TREE}} for d, f in FILES.items()}
        done = collected_run(client, fileset, Muons(), CHUNKSIZE)
        registered = client.run_on_scheduler(has_plugin)
        metrics_url = cluster.dashboard_link.rsplit("/", 1)[0] + "/metrics"
        with urllib.request.urlopen(metrics_url, timeout=30) as answer:
            series = answer.read().decode()
        client.close()
        return {
            "preloaded": preloaded,
            "registered": registered,
            "mc": done.mc,
            "metrics": done.mc.get_metrics(),
            "output": done.output,
            "report": done.report,
            "series": series,
            "metrics_url": metrics_url,
        }
    finally:
        cluster.shutdown()
        forget_loop(cluster.gateway)


@pytest.fixture(scope="module")
def by_option(gateway: Gateway, cms_data: Path) -> dict[str, Any]:
    return measured_run(gateway, cms_data)


@pytest.fixture(scope="module")
def by_collector(gateway: Gateway, cms_data: Path) -> dict[str, Any]:
    return measured_run(gateway, cms_data, roastcoffea=False)


def test_the_cluster_option_is_offered_and_on_by_default(gateway: Gateway) -> None:
    options = gateway.cluster_options()
    assert options.roastcoffea is True


def test_the_option_preloads_the_plugin_pair_the_collector_uses(by_option: dict[str, Any]) -> None:
    assert by_option["preloaded"] is True
    mc = by_option["mc"]
    assert mc.collector_errors == []
    assert not any("registered" in note for note in mc.notes), mc.notes


def test_without_the_option_the_collector_registers_the_plugin_pair(
    by_collector: dict[str, Any],
) -> None:
    assert by_collector["preloaded"] is False
    assert by_collector["registered"] is True
    assert by_collector["mc"].collector_errors == []


@pytest.mark.parametrize("how", ["by_option", "by_collector"])
def test_a_coffea_run_is_exact_against_coffeas_report(
    how: str, request: pytest.FixtureRequest
) -> None:
    run = request.getfixturevalue(how)
    m, report, output = run["metrics"], run["report"], run["output"]
    assert report["entries"] == 80 == output["events"]
    assert m["total_events"] == report["entries"]
    assert m["num_chunks"] == report["chunks"] == 8
    assert sum(c["bytes_read_task"] for c in m["raw_chunk_metrics"]) == report["bytesread"]
    assert m["phase_tasks"] == 8
    assert m["per_dataset"].keys() == FILES.keys()


@pytest.mark.parametrize("how", ["by_option", "by_collector"])
def test_the_prometheus_series_are_served_through_the_gateways_proxy(
    how: str, request: pytest.FixtureRequest
) -> None:
    run = request.getfixturevalue(how)
    assert "/clusters/" in run["metrics_url"]
    events = [
        line
        for line in run["series"].splitlines()
        if line.startswith("roastcoffea_dataset_events_total{")
    ]
    assert sum(float(line.rsplit(" ", 1)[1]) for line in events) == 80, events
