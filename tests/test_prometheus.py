"""The Prometheus export, scraped from the scheduler's own /metrics and by a real Prometheus.

A private cluster runs a real coffea measurement over the CMS files; its
scheduler's ``/metrics`` must then show roastcoffea's series with the values
of the plugin's own snapshot, the events coffea reports, and what a real
Prometheus server (Debian's ``prometheus``, installed by ``make test``)
stores when it scrapes the cluster.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import socket
import subprocess
import urllib.parse
import urllib.request
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import local_cluster
from distributed import Client
from measured_run import Measured, measure
from prometheus_client.parser import text_string_to_metric_families
from roast_testing import wait_for

from roastcoffea import RoastPlugin
from roastcoffea.plugin import flush, snapshot
from roastcoffea.plugin.scheduler.prometheus import CHUNK_DURATION_BUCKETS, FOLDED

pytestmark = pytest.mark.cluster

DASHBOARD = Path(__file__).parents[1] / "docs" / "grafana-dashboard.json"


class Scraped:
    """One cluster's measured run and a scrape of its scheduler's /metrics."""

    def __init__(self, client: Client, port: int, measured: Measured) -> None:
        self.client = client
        self.port = port
        self.measured = measured

    def scrape(self) -> dict[str, dict[tuple, float]]:
        """{sample name: {sorted label items: value}} of the roastcoffea series."""
        url = f"http://127.0.0.1:{self.port}/metrics"
        text = urllib.request.urlopen(url, timeout=10).read().decode()
        out: dict[str, dict[tuple, float]] = defaultdict(dict)
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name.startswith("roastcoffea_"):
                    out[sample.name][tuple(sorted(sample.labels.items()))] = sample.value
        return dict(out)


@pytest.fixture(scope="module")
def scraped(cms_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scraped]:
    with local_cluster() as cluster, Client(cluster) as client:
        measured = measure(client, cms_data, tmp_path_factory.mktemp("prometheus"))
        yield Scraped(client, cluster.scheduler.http_server.port, measured)


def execute_totals(snap: dict[str, Any], by: int, unit: str) -> dict[tuple, float]:
    """The snapshot's execute digests in ``unit``, summed by worker (0) or prefix (3)."""
    out: dict[tuple, float] = defaultdict(float)
    for key, value in snap["digests"].items():
        if key[1] == "execute" and key[5] == unit:
            out[(key[by], key[4])] += value
    return dict(out)


def labelled(series: dict[tuple, float], *names: str) -> dict[tuple, float]:
    return {tuple(dict(labels)[n] for n in names): v for labels, v in series.items()}


def test_task_seconds_per_prefix_and_worker_equal_the_snapshot(scraped: Scraped) -> None:
    snap = snapshot(scraped.client)  # flushed: every worker's final digests
    series = scraped.scrape()
    by_prefix = execute_totals(snap, 3, "seconds")
    by_worker = execute_totals(snap, 0, "seconds")
    ours = labelled(series["roastcoffea_task_seconds_total"], "prefix", "activity")
    theirs = {k: v for k, v in by_prefix.items() if not k[1].startswith("phase")}
    assert theirs and ours.keys() == theirs.keys() and FOLDED not in {p for p, _ in ours}
    for key, value in theirs.items():
        assert ours[key] == pytest.approx(value, rel=1e-12), key
    ours = labelled(series["roastcoffea_worker_task_seconds_total"], "worker", "activity")
    for key, value in by_worker.items():
        assert ours[key] == pytest.approx(value, rel=1e-12), key
    assert {w for w, _ in ours} == set(scraped.client.scheduler_info()["workers"])


def test_phase_series_equal_the_phase_digests(scraped: Scraped) -> None:
    snap = snapshot(scraped.client)
    wall = labelled(scraped.scrape()["roastcoffea_phase_wall_seconds_total"], "worker", "phase")
    digests = execute_totals(snap, 0, "wall-seconds")
    expected = {(w, a.removeprefix("phase:")): v for (w, a), v in digests.items() if "phase:" in a}
    assert wall.keys() == expected.keys() and expected
    for key, value in expected.items():
        assert wall[key] == pytest.approx(value, rel=1e-12), key


def test_dataset_series_equal_coffea_report_and_the_chunk_records(scraped: Scraped) -> None:
    series = scraped.scrape()
    collector = scraped.measured.collector
    chunks = collector.chunk_metrics
    events = labelled(series["roastcoffea_dataset_events_total"], "dataset")
    # coffea's own count of the events it processed, an independent source
    assert sum(events.values()) == collector.coffea_report["entries"]
    for (dataset,), value in events.items():
        assert value == sum(c["num_events"] for c in chunks if c["dataset"] == dataset)
    counts = labelled(series["roastcoffea_dataset_chunks_total"], "dataset")
    assert sum(counts.values()) == len(chunks) == collector.coffea_report["chunks"]
    read = labelled(series["roastcoffea_dataset_bytes_read_total"], "dataset")
    for (dataset,), value in read.items():
        assert value == sum(c["bytes_read_task"] for c in chunks if c["dataset"] == dataset)


def test_chunk_duration_histogram_holds_every_chunk(scraped: Scraped) -> None:
    series = scraped.scrape()
    durations = [c["duration"] for c in scraped.measured.collector.chunk_metrics]
    buckets = labelled(series["roastcoffea_chunk_duration_seconds_bucket"], "le")
    for bound in CHUNK_DURATION_BUCKETS:
        assert buckets[(repr(bound),)] == sum(1 for d in durations if d <= bound)
    assert buckets[("+Inf",)] == len(durations)
    assert series["roastcoffea_chunk_duration_seconds_count"][()] == len(durations)
    assert series["roastcoffea_chunk_duration_seconds_sum"][()] == pytest.approx(
        math.fsum(durations), rel=1e-12
    )


def test_worker_gauges_and_self_report(scraped: Scraped) -> None:
    series = scraped.scrape()
    workers = scraped.client.scheduler_info()["workers"]
    threads = labelled(series["roastcoffea_worker_threads"], "worker")
    limits = labelled(series["roastcoffea_worker_memory_limit_bytes"], "worker")
    memory = labelled(series["roastcoffea_worker_memory_bytes"], "worker")
    for address, info in workers.items():
        assert threads[(address,)] == info["nthreads"]
        assert limits[(address,)] == info["memory_limit"]
        assert memory[(address,)] > 0
    counters = snapshot(scraped.client, flush=False)["counters"]
    assert series["roastcoffea_monitoring_records_total"][()] == counters["records"]
    assert series["roastcoffea_monitoring_hook_errors_total"][()] == 0
    assert series["roastcoffea_monitoring_dropped_events_total"][()] == 0


def test_grafana_dashboard_uses_only_exported_series(scraped: Scraped) -> None:
    exported = set(scraped.scrape())
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]
    used = {name for expr in exprs for name in re.findall(r"roastcoffea_\w+", expr)}
    assert used and used <= exported, used - exported


# ---- a real Prometheus server ------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def prometheus(scraped: Scraped, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Prometheus server scraping the cluster's scheduler every second; its URL."""
    binary = shutil.which("prometheus")
    assert binary, "Debian's prometheus is missing: `make test-deps` installs it"
    root = tmp_path_factory.mktemp("prometheus-server")
    config = root / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, scrape_timeout: 1s}\n"
        "scrape_configs:\n"
        "  - job_name: dask-scheduler\n"
        f"    static_configs: [{{targets: ['127.0.0.1:{scraped.port}']}}]\n"
    )
    port = free_port()
    log = (root / "prometheus.log").open("w")
    server = subprocess.Popen(
        [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={root / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        ready = wait_for(lambda: _get(f"{url}/-/ready") is not None, bool, timeout=60)
        assert ready, (root / "prometheus.log").read_text()[-2000:]
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


#: Labels Prometheus adds to every series it scrapes.
TARGET_LABELS = ("__name__", "job", "instance")


def _get(url: str) -> bytes | None:
    try:
        return urllib.request.urlopen(url, timeout=5).read()
    except OSError:
        return None


def query(url: str, promql: str) -> dict[tuple, float]:
    """An instant query's vector as {sorted label items: value}, without the target's labels."""
    answer = _get(f"{url}/api/v1/query?query={urllib.parse.quote(promql)}")
    if answer is None:
        return {}
    out = {}
    for item in json.loads(answer)["data"]["result"]:
        labels = {
            k: v for k, v in item["metric"].items() if k not in ("__name__", "job", "instance")
        }
        out[tuple(sorted(labels.items()))] = float(item["value"][1])
    return out


def test_a_real_prometheus_stores_the_snapshot_values(scraped: Scraped, prometheus: str) -> None:
    snap = snapshot(scraped.client)
    expected = {
        (("activity", a), ("prefix", p)): v
        for (p, a), v in execute_totals(snap, 3, "seconds").items()
        if not a.startswith("phase")
    }
    assert expected
    stored = wait_for(
        lambda: query(prometheus, "roastcoffea_task_seconds_total"),
        lambda got: (
            got.keys() == expected.keys()
            and all(math.isclose(got[k], v, rel_tol=1e-12) for k, v in expected.items())
        ),
        timeout=60,
    )
    assert stored.keys() == expected.keys()
    for key, value in expected.items():
        assert stored[key] == pytest.approx(value, rel=1e-12), key
    entries = scraped.measured.collector.coffea_report["entries"]
    events = wait_for(
        lambda: query(prometheus, "sum(roastcoffea_dataset_events_total)"),
        lambda got: got.get(()) == entries,
        timeout=60,
    )
    assert events == {(): entries}


def many_activities(n: int) -> int:
    """A task filing ``n`` fine metrics of its own, one label each (user code may)."""
    from distributed.metrics import context_meter

    for i in range(n):
        context_meter.digest_metric(f"user-act-{i}", 0.001, "seconds")
    return n


def test_activities_a_task_makes_up_are_bounded(tmp_path: Path) -> None:
    with local_cluster(n_workers=1) as cluster, Client(cluster) as client:
        client.register_plugin(RoastPlugin())
        assert client.submit(many_activities, 2000, pure=False).result() == 2000
        flush(client)
        snap = snapshot(client)
        url = f"http://127.0.0.1:{cluster.scheduler.http_server.port}/metrics"
        text = urllib.request.urlopen(url, timeout=10).read().decode()
    samples = [
        s
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name.startswith("roastcoffea_")
    ]
    task = [s for s in samples if s.name == "roastcoffea_task_seconds_total"]
    activities = {s.labels["activity"] for s in task}
    assert len(activities) == 50 + 1 and FOLDED in activities
    folded = next(s.value for s in samples if s.name == "roastcoffea_export_activities_folded")
    made = {k[4] for k in snap["digests"] if k[1] == "execute" and k[5] == "seconds"}
    assert len(made) > 2000 and folded == len(made) - 50
    # every second is still there, under a kept label or under "(other)"
    user = sum(s.value for s in task if s.labels["activity"].startswith("user-act-"))
    other = sum(s.value for s in task if s.labels["activity"] == FOLDED)
    assert user + other == pytest.approx(2000 * 0.001)
    assert len(samples) < 400  # bounded by the settings, not by the task
