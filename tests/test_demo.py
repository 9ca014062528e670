"""The demo: the dijet + dimuon processor on synthetic NanoAOD, run end to end."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

import awkward as ak
import numpy as np
import psutil
import pytest
import uproot
from distributed import Client

from roastcoffea import load_measurement
from roastcoffea.cli import main
from roastcoffea.demo import analysis
from roastcoffea.demo.analysis import DATASET, mjj_hist, mll_hist, run_demo

N_EVENTS, N_FILES, CHUNKSIZE = 40_000, 2, 10_000


def _pair_mass(pt: ak.Array, eta: ak.Array, phi: ak.Array, mass: ak.Array) -> np.ndarray:
    """Invariant mass of the first two objects of each event, in float64."""
    pt, eta, phi, mass = (ak.to_numpy(x[:, :2]).astype(np.float64) for x in (pt, eta, phi, mass))
    px, py, pz = pt * np.cos(phi), pt * np.sin(phi), pt * np.sinh(eta)
    energy = np.sqrt(px**2 + py**2 + pz**2 + mass**2)
    total = [v.sum(axis=1) for v in (energy, px, py, pz)]
    return np.sqrt(np.maximum(total[0] ** 2 - total[1] ** 2 - total[2] ** 2 - total[3] ** 2, 0))


def _expected(files: list[Path]) -> tuple[dict[str, int], np.ndarray, np.ndarray]:
    """The demo's selection computed directly with uproot and awkward."""
    cutflow = dict.fromkeys(analysis.CUTFLOW, 0)
    mjj, mll = [], []
    for path in files:
        a = uproot.open(path)["Events"].arrays(filter_name=["Jet_*", "Muon_*"])
        jet = (
            (a.Jet_pt > analysis.JET_PT_MIN)
            & (abs(a.Jet_eta) < analysis.JET_ETA_MAX)
            & ((a.Jet_jetId & 2) > 0)
        )
        dijet = ak.sum(jet, axis=1) >= 2
        j = {k: a[f"Jet_{k}"][jet][dijet] for k in ("pt", "eta", "phi", "mass")}
        mjj.append(_pair_mass(j["pt"], j["eta"], j["phi"], j["mass"]))
        muon = (
            (a.Muon_pt > analysis.MUON_PT_MIN)
            & (abs(a.Muon_eta) < analysis.MUON_ETA_MAX)
            & a.Muon_tightId
            & (a.Muon_pfRelIso04_all < analysis.MUON_ISO_MAX)
        )
        two = ak.sum(muon, axis=1) == 2
        charge = a.Muon_charge[muon][two]
        opposite = charge[:, 0] != charge[:, 1]
        m = {k: a[f"Muon_{k}"][muon][two][opposite] for k in ("pt", "eta", "phi", "mass")}
        mass = _pair_mass(m["pt"], m["eta"], m["phi"], m["mass"])
        mll.append(mass)
        cutflow["events"] += len(a)
        cutflow["dijet"] += int(ak.sum(dijet))
        cutflow["dimuon"] += int(ak.sum(two))
        cutflow["dimuon_os"] += int(ak.sum(opposite))
        cutflow["z_window"] += int(np.sum((mass > 76) & (mass < 106)))
    return cutflow, np.concatenate(mjj), np.concatenate(mll)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, client: Client) -> analysis.DemoResult:
    root = tmp_path_factory.mktemp("demo")
    return run_demo(
        root / "data",
        N_EVENTS,
        N_FILES,
        CHUNKSIZE,
        output_dir=root / "out",
        client=client,
        summary=False,
    )


def test_demo_output_equals_a_direct_computation(demo: analysis.DemoResult) -> None:
    cutflow, mjj, mll = _expected(demo.files)
    out = demo.output[DATASET]
    assert out["cutflow"] == cutflow
    assert cutflow["events"] == N_EVENTS and cutflow["z_window"] > 0.05 * N_EVENTS
    for got, expected, values in ((out["mjj"], mjj_hist(), mjj), (out["mll"], mll_hist(), mll)):
        expected.fill(values)
        np.testing.assert_array_equal(got.values(flow=True), expected.values(flow=True))
    assert demo.report["entries"] == N_EVENTS
    assert demo.report["chunks"] == N_EVENTS // CHUNKSIZE


def test_demo_is_measured_and_saved(demo: analysis.DemoResult) -> None:
    metrics = demo.metrics
    assert metrics is not None and demo.measurement is not None
    assert metrics["total_events"] == N_EVENTS
    assert metrics["num_chunks"] == N_EVENTS // CHUNKSIZE
    assert "DemoProcessor" in metrics["processor_prefixes"]
    sections = metrics["sections"]
    n_chunks = N_EVENTS // CHUNKSIZE
    for kind, names in {
        "timing": ("jets", "muons", "histograms"),
        "bytes": ("jets", "muons"),
        "memory": ("histograms",),
    }.items():
        for name in names:
            assert sections[kind][name]["count"] == n_chunks, (kind, name)
    assert sections["bytes"]["jets"]["total"] > 0
    z_window = demo.output[DATASET]["cutflow"]["z_window"]
    assert sections["custom"]["z_candidates"]["total"] == z_window
    for name in ("metrics.json", "metadata.json"):
        assert (demo.measurement / name).is_file()
    loaded, _, _ = load_measurement(demo.measurement)
    assert loaded["total_events"] == N_EVENTS


def test_demo_without_collector(demo: analysis.DemoResult, client: Client) -> None:
    data_dir = demo.files[0].parent
    bare = run_demo(data_dir, N_EVENTS, N_FILES, 20_000, client=client, collect=False)
    assert bare.files == demo.files  # the cached files were reused
    assert bare.metrics is None and bare.measurement is None
    assert bare.output[DATASET]["cutflow"] == demo.output[DATASET]["cutflow"]


def test_demo_over_xrootd_reads_root_urls_and_gives_the_same_output(
    demo: analysis.DemoResult, client: Client, tmp_path: Path
) -> None:
    data_dir = demo.files[0].parent
    remote = run_demo(
        data_dir,
        N_EVENTS,
        N_FILES,
        CHUNKSIZE,
        output_dir=tmp_path,
        client=client,
        summary=False,
        xrootd=True,
    )
    assert remote.output[DATASET]["cutflow"] == demo.output[DATASET]["cutflow"]
    assert remote.metrics is not None and demo.metrics is not None
    read = remote.metrics["file_read_metrics"]
    assert len(read) == N_FILES and all(url.startswith("root://127.0.0.1:") for url in read)
    local = demo.metrics["file_read_metrics"]
    assert sorted(r["bytes_read"] for r in read.values()) == sorted(
        r["bytes_read"] for r in local.values()
    )


def test_demo_on_rntuple_files_gives_the_same_output(
    demo: analysis.DemoResult, client: Client, tmp_path: Path
) -> None:
    rntuple = run_demo(
        tmp_path / "data",
        N_EVENTS,
        N_FILES,
        CHUNKSIZE,
        output_dir=tmp_path / "out",
        client=client,
        summary=False,
        layout="rntuple",
    )
    assert rntuple.output[DATASET]["cutflow"] == demo.output[DATASET]["cutflow"]
    assert rntuple.metrics is not None
    units = {r["storage_unit"] for r in rntuple.metrics["file_read_metrics"].values()}
    assert units == {"page"}


def test_cli_demo_over_xrootd_without_the_server_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert main(["demo", "--xrootd"]) == 2
    assert "apt-get install xrootd-server" in capsys.readouterr().err


@pytest.mark.cluster
def test_cli_runs_the_demo_on_its_own_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "demo",
            "--events",
            "4000",
            "--files",
            "2",
            "--chunksize",
            "1000",
            "--data-dir",
            str(tmp_path / "data"),
            "--output",
            str(tmp_path / "out"),
            "--workers",
            "2",
        ]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "cutflow: events 4,000, dijet" in text
    assert (tmp_path / "out" / "demo" / "metrics.json").is_file()
    report = tmp_path / "out" / "demo" / "report.html"
    assert f"report written to {report}" in text
    assert "Throughput Metrics" in report.read_text()
    assert len(list((tmp_path / "data").glob("nano_*.root"))) == 2


def listening(process: psutil.Process) -> set[tuple[str, int]]:
    return {
        (c.laddr.ip, c.laddr.port)
        for c in process.net_connections("inet")
        if c.status == psutil.CONN_LISTEN
    }


@pytest.mark.cluster
def test_the_demos_cluster_listens_on_the_loopback_only() -> None:
    # The scheduler, its dashboard and the nannies in this process, the workers in theirs.
    here = psutil.Process()
    before = listening(here)
    with analysis.local_cluster(2) as cluster, Client(cluster) as client:
        workers = [psutil.Process(pid) for pid in client.run(os.getpid).values()]
        servers = (listening(here) - before).union(*map(listening, workers))
        assert {port for _, port in servers} >= {
            urlparse(cluster.dashboard_link).port,
            urlparse(cluster.scheduler_address).port,
        }
    assert {host for host, _ in servers} == {"127.0.0.1"}, servers


def test_default_data_dir_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROASTCOFFEA_CACHE", str(tmp_path))
    assert analysis.default_data_dir() == tmp_path / "demo"
    monkeypatch.delenv("ROASTCOFFEA_CACHE")
    assert analysis.default_data_dir() == Path.home() / ".cache" / "roastcoffea" / "demo"


def test_cli_rejects_bad_arguments() -> None:
    with pytest.raises(SystemExit):
        main([])
    with pytest.raises(SystemExit):
        main(["demo", "--events", "0"])
