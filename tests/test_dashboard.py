"""The roastcoffea page on the scheduler's dashboard, read by headless Chromium on a live cluster.

A private cluster (so the page's totals since the plugin started are this run's alone) runs
the measured coffea analysis; the page, as the browser renders it after its scripts ran,
must show that run's events, chunks and datasets as coffea's report and the collector give
them, the processor's and the overhead's thread time as the collector computed them, and a
row of phases for every worker.
"""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from browser import run_chromium
from measured_run import measure

from roastcoffea import RoastPlugin
from roastcoffea.plugin.scheduler.rate_series import MAX_POINTS
from roastcoffea.units import format_bytes, format_rate, format_time

#: A private cluster of its own.
pytestmark = pytest.mark.cluster

#: The run's name, as the user gave it (markup in it is text).
RUN_NAME = "dimuon <selection> v2"


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def text_of(dom: str, element_id: str) -> str:
    match = re.search(rf'id="{element_id}"><b>([^<]*)</b>', dom)
    assert match is not None, element_id
    return match.group(1)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, cms_data: Path) -> Any:
    from conftest import local_cluster
    from distributed import Client

    with local_cluster() as cluster, Client(cluster) as client:
        client.register_plugin(RoastPlugin())
        measured = measure(client, cms_data, tmp_path_factory.mktemp("dashboard"), RUN_NAME)
        base = client.dashboard_link.rsplit("/", 1)[0] + "/roastcoffea"
        status, body = get(base + "/data.json")
        assert status == 200, body
        profile = tmp_path_factory.mktemp("profile")
        dom = run_chromium(profile, "--virtual-time-budget=5000", "--dump-dom", base).stdout
        dask_page = run_chromium(
            profile, "--virtual-time-budget=5000", "--dump-dom", client.dashboard_link
        ).stdout
        yield measured, json.loads(body), dom, base, dask_page
    # The cluster is gone: nothing serves the page any more.


def test_the_data_are_the_runs_own(served: Any) -> None:
    measured, data, _, _, _ = served
    m = measured.metrics
    assert (data["events"], data["chunks"]) == (m["total_events"], m["num_chunks"])
    assert {d: row["events"] for d, row in data["datasets"].items()} == {
        d: row["total_events"] for d, row in m["per_dataset"].items()
    }
    assert data["processor_prefixes"] == m["processor_prefixes"]
    processor = data["thread_seconds"]["processor"]
    assert processor["cpu"] == pytest.approx(m["processor_cpu_time_seconds"], rel=1e-9)
    assert processor["noncpu"] == pytest.approx(m["processor_noncpu_time_seconds"], rel=1e-9)
    walls = {w: sum(p.values()) for w, p in data["phases_per_worker"].items()}
    assert sum(walls.values()) == pytest.approx(sum(m["phase_wall_seconds"].values()), rel=1e-9)
    # The run's own row: its chunks and events, its phases adding up to the collector's.
    (run,) = data["runs"]
    assert run["span"] == measured.collector.span_id and run["name"] == RUN_NAME
    assert m["span_info"]["name"] == RUN_NAME
    # Its events over time: buckets that add up to its events, no more than MAX_POINTS.
    series = run["rate"]
    assert sum(series["events"]) == m["total_events"] and 0 < len(series["events"]) <= MAX_POINTS
    assert series["width"] >= 1.0 and run["first"] <= series["start"] <= run["last"]
    assert (run["chunks"], run["events"], run["done"]) == (m["num_chunks"], m["total_events"], True)
    for phase, seconds in m["phase_wall_seconds"].items():
        assert run["phases"].get(phase, 0.0) == pytest.approx(seconds, rel=1e-9, abs=1e-12)
    # One number per name: the row's event rate is the collector's, on its wall time.
    assert run["wall_time"] == m["wall_time"]
    assert run["events"] / run["wall_time"] == pytest.approx(1e3 * m["event_rate_wall_khz"])
    # Per dataset, the digests' walls equal the phase records' (an independent path).
    for dataset, phases in m["phase_per_dataset"].items():
        for phase, seconds in phases.items():
            assert data["phases_per_dataset"][dataset][phase] == pytest.approx(seconds, rel=1e-9)


def test_chromium_shows_the_page_with_the_runs_figures(served: Any) -> None:
    measured, data, dom, _, _ = served
    m = measured.metrics
    assert text_of(dom, "events-total") == f"{m['total_events']:,}"
    assert text_of(dom, "chunks-total") == f"{m['num_chunks']:,}"
    assert text_of(dom, "bytes-total") == format_bytes(data["bytes"])
    status = re.search(r'id="status">([^<]*)<', dom)
    assert status is not None and status.group(1).startswith("updated "), status
    for dataset, row in m["per_dataset"].items():
        assert f'<td>{dataset}</td><td class="n">{row["num_chunks"]}</td>' in dom
    for worker in data["phases_per_worker"]:
        assert f'<td class="worker">{worker}</td>' in dom
    for dataset in m["phase_per_dataset"]:
        assert f'<td class="dataset">{dataset}</td>' in dom
    span = measured.collector.span_id
    name = RUN_NAME.replace("<", "&lt;").replace(">", "&gt;")
    assert re.search(
        rf'<td class="run" data-span="{span}" title="span {span}">{name}<small>started '
        r"\d\d:\d\d:\d\d</small></td>"
        rf'<td>done</td><td class="n">{m["num_chunks"]}</td>'
        rf'<td class="n">{m["total_events"]:,}</td>'
        rf'<td class="n">{format_rate(1e3 * m["event_rate_wall_khz"])}</td>',
        dom,
    ), "the run's row, under its name; its rate the summary's Event Rate (Wall Time)"
    # The rate over time: one point per bucket, the buckets' events the run's.
    line = re.search(rf'<svg class="rate"[^>]*data-span="{span}"[^>]*>.*?</svg>', dom)
    assert line is not None, "the run's rate line"
    assert f'data-events="{m["total_events"]}"' in line.group(0)
    points = re.search(r'points="([^"]*)"', line.group(0))
    assert points is not None and len(points.group(1).split()) == len(
        data["runs"][0]["rate"]["events"]
    )
    seconds = sum(data["thread_seconds"]["processor"].values())
    assert f'<td>processor</td><td class="n">{format_time(seconds)}</td>' in dom


def test_dasks_pages_list_the_page_in_their_navigation(served: Any) -> None:
    # Bokeh is installed (roastcoffea[dashboard]): Dask draws its pages, and their
    # navigation bar links to this one, relative to them, as to its own.
    _, _, _, base, dask_page = served
    assert '<a href="status">Status</a>' in dask_page, dask_page[:2000]
    assert '<a href="roastcoffea">Roastcoffea</a>' in dask_page
    status, page = get(base)
    assert status == 200 and '<a id="dask" href="../status">' in page  # and back


def test_the_page_is_the_schedulers_own(served: Any) -> None:
    _, _, _, base, _ = served
    status, page = get(base)
    assert status == 200 and "<title>roastcoffea</title>" in page
    assert "http://" not in page.replace("http://www.w3.org", "")  # no network needed
