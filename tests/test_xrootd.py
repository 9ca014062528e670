"""Reads over XRootD: a real ``xrootd`` server started here, read by coffea through ``root://``.

The server is Debian's ``xrootd-server`` (``make test`` installs it), configured
by :func:`roastcoffea.demo.xrootd.serve` on 127.0.0.1; coffea reads its files
through uproot's default handler for ``root://`` URLs (fsspec-xrootd over the
XRootD client). Checked against independent figures:

* each file's bytes are uproot's distinct baskets, and each chunk's are those
  of the same chunk read from the local file;
* each chunk's requests and bytes equal uproot's own counters of its source;
* each task's phases add up to its compute time;
* paced by XRootD's throttle plugin (a share of bytes per one-second interval),
  a task's wait for the server is ``read``: at least the intervals its bytes
  need, and the diagnosis names the storage.
"""

from __future__ import annotations

import math
import socket
import struct
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import awkward as ak
import cloudpickle
import psutil
import pytest
from coffea import processor
from coffea_run import TREE, collected_run
from conftest import local_cluster
from distributed import Client
from uproot_truth import uproot_distinct_baskets

from roastcoffea import RoastPlugin, track_metrics
from roastcoffea.demo.nanoaod import generate
from roastcoffea.demo.xrootd import THROTTLE_INTERVAL_SECONDS, serve

cloudpickle.register_pickle_by_value(sys.modules[__name__])
pytestmark = pytest.mark.cluster  # the paced run starts a cluster of its own

#: The paced server's share of bytes per throttle interval.
PACED_RATE = 250e3


class SourceReader(processor.ProcessorABC):
    """Reads jets and muons; returns its source's kind and uproot's own counters of it."""

    @track_metrics
    def process(self, events: Any) -> dict[str, Any]:
        jets, muons = events.Jet, events.Muon
        total = sum(float(ak.sum(c)) for c in (jets.pt, jets.eta, jets.phi, muons.pt, muons.eta))
        source = events.attrs["@events_factory"].file_handle.file.source
        meta = events.metadata
        counters = (source.num_requests, source.num_requested_chunks, source.num_requested_bytes)
        kind = (type(source).__name__, type(getattr(source, "_fs", None)).__name__)
        return {
            "sum": total,
            "counters": {(meta["filename"], meta["entrystart"]): counters},
            "sources": {kind},
        }

    def postprocess(self, accumulator: Any) -> Any:
        return accumulator


def run(client: Client, fileset: dict[str, Any], chunksize: int) -> tuple[dict, Any, dict]:
    done = collected_run(client, fileset, SourceReader(), chunksize)
    return done.mc.get_metrics(), done.output, done.durations


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    directory = tmp_path_factory.mktemp("xrootd")
    return generate(directory, 40000, 2, compression="lz4:1", basket_events=5000, processes=1)


@pytest.fixture(scope="module")
def over_xrootd(client: Client, files: list[Path]) -> dict[str, Any]:
    client.register_plugin(RoastPlugin())
    with serve(files) as urls:
        remote = {p.stem: {"files": {urls[str(p)]: TREE}} for p in files}
        metrics, output, durations = run(client, remote, chunksize=10000)
    local = {p.stem: {"files": {str(p): TREE}} for p in files}
    local_metrics, _, _ = run(client, local, chunksize=10000)
    return {
        "metrics": metrics,
        "output": output,
        "durations": durations,
        "local": local_metrics,
        "paths": {url: Path(path) for path, url in urls.items()},
    }


def test_root_urls_are_read_by_uproots_default_handler(over_xrootd: dict[str, Any]) -> None:
    assert over_xrootd["output"]["sources"] == {("FSSpecSource", "XRootDFileSystem")}
    files = set(over_xrootd["metrics"]["file_read_metrics"])
    assert files == set(over_xrootd["paths"]) and all(f.startswith("root://") for f in files)


def test_file_bytes_are_uproots_distinct_baskets(over_xrootd: dict[str, Any]) -> None:
    metrics = over_xrootd["metrics"]
    for url, path in over_xrootd["paths"].items():
        records = [r for r in metrics["raw_chunk_metrics"] if r["file"] == url]
        assert len(records) == 2
        branches = {b for r in records for b in r["accessed_branches"]}
        ranges = [(r["entry_start"], r["entry_stop"]) for r in records]
        expected = uproot_distinct_baskets(str(path), branches, ranges)
        ours = metrics["file_read_metrics"][url]
        assert ours["baskets_read"] == expected["baskets"] > 0
        assert ours["bytes_read"] == expected["compressed"]
        assert ours["bytes_read_uncompressed"] == expected["uncompressed"]


def test_chunk_bytes_equal_those_of_the_local_files(over_xrootd: dict[str, Any]) -> None:
    def by_chunk(metrics: dict[str, Any]) -> dict[tuple[str, int], tuple]:
        return {
            (Path(r["file"]).name, r["entry_start"]): (
                r["accessed_bytes"],
                r["accessed_uncompressed_bytes"],
                r["open_bytes"],
            )
            for r in metrics["raw_chunk_metrics"]
        }

    remote, local = by_chunk(over_xrootd["metrics"]), by_chunk(over_xrootd["local"])
    assert len(remote) == 4 and remote == local
    assert over_xrootd["metrics"]["phase_read_bytes"] == over_xrootd["local"]["phase_read_bytes"]


def test_request_counts_equal_uproots_own_counters(over_xrootd: dict[str, Any]) -> None:
    counters = over_xrootd["output"]["counters"]
    chunks = over_xrootd["metrics"]["raw_chunk_metrics"]
    assert len(chunks) == len(counters) == 4
    for chunk in chunks:
        requests, ranges, fetched = counters[chunk["file"], chunk["entry_start"]]
        assert chunk["read_requests_task"] == requests > 0
        assert chunk["read_ranges_task"] == ranges
        assert chunk["bytes_read_task"] == fetched
    for url, shape in over_xrootd["metrics"]["read_shapes"].items():
        assert shape["remote"] is True, url


def test_phases_add_up_to_each_task_compute_time(over_xrootd: dict[str, Any]) -> None:
    records, durations = over_xrootd["metrics"]["raw_phase_records"], over_xrootd["durations"]
    assert sorted(r["task_key"] for r in records) == sorted(durations)
    for record in records:
        total = math.fsum(record["wall"].values())
        assert total == pytest.approx(record["elapsed"], rel=1e-9)
        assert total <= durations[record["task_key"]] + 1e-3
        assert record["wall"]["read"] > 0 and record["wall"]["open"] > 0


@pytest.fixture(scope="module")
def paced(files: list[Path]) -> Iterator[dict[str, Any]]:
    # One chunk on one worker thread: the task's own bytes decide its wait.
    with local_cluster(n_workers=1) as cluster, Client(cluster) as client:
        client.register_plugin(RoastPlugin())
        with serve(files[:1], bytes_per_second=PACED_RATE) as urls:
            fileset = {"paced": {"files": {urls[str(files[0])]: TREE}}}
            metrics, _, _ = run(client, fileset, chunksize=20000)
        yield metrics


def test_a_paced_servers_wait_is_read_and_the_diagnosis_names_storage(
    paced: dict[str, Any],
) -> None:
    (chunk,) = paced["raw_chunk_metrics"]
    (record,) = paced["raw_phase_records"]
    # The throttle serves at most PACED_RATE bytes per interval: the task's bytes (the
    # file's metadata and its baskets) span at least ceil(bytes / share) intervals, so
    # from its first byte to its last more than that many, less two, whole intervals
    # pass. Its thread spends them waiting but for decompressing and interpreting
    # 1.4 MB of LZ4 (tens of ms): the read and open waits hold at least 80 %.
    fetched = chunk["open_bytes"] + chunk["bytes_read_task"]
    intervals = math.ceil(fetched / PACED_RATE)
    assert intervals >= 6
    expected = (intervals - 2) * THROTTLE_INTERVAL_SECONDS
    waits = record["wall"]["read"] + record["wall"]["open"]
    assert 0.8 * expected <= waits <= record["elapsed"]
    assert record["wall"]["read"] >= 0.8 * expected - record["wall"]["open"]
    rules = [finding["rule"] for finding in paced["diagnosis"]]
    assert "storage" in rules
    storage = next(f for f in paced["diagnosis"] if f["rule"] == "storage")
    assert "read" in storage["message"]


#: XRootD's initial handshake (four zero words, then 4 and 2012); a server answers 16 bytes.
HANDSHAKE = struct.pack(">5i", 0, 0, 0, 4, 2012)


def handshake(host: str, port: int) -> bytes:
    """The server's answer to a client's handshake from ``host``; b"" when it hung up."""
    with socket.create_connection((host, port), timeout=10) as conn:
        try:
            conn.sendall(HANDSHAKE)
            return conn.recv(16)
        except ConnectionResetError:
            return b""


def network_address() -> str:
    """An IPv4 address of this machine other than the loopback's."""
    addresses = [
        a.address
        for nic in psutil.net_if_addrs().values()
        for a in nic
        if a.family == socket.AF_INET and not a.address.startswith("127.")
    ]
    assert addresses, "the machine has no network address to connect from"
    return addresses[0]


def test_the_server_admits_the_loopback_only(files: list[Path]) -> None:
    with serve(files[:1]) as urls:
        port = int(next(iter(urls.values())).split(":")[2].split("/")[0])
        assert len(handshake("127.0.0.1", port)) == 16
        assert handshake(network_address(), port) == b""
