"""The diagnosis against causes the tests inject, on generated files and real coffea runs.

Each run has one known cause, and the finding that ranks first must name it:

- CPU contention (six CPU-burning processes started here beside the workers) →
  ``contention``, with the node's runnable threads, and no I/O or chunk-size remedy;
- slow storage (the local XRootD server's throttle) → ``storage``;
- LZMA-9 files → ``decompression``, naming LZMA;
- baskets of 40 chunks' entries → ``basket-size``, naming both sizes, the read
  amplification counted from what was decompressed (40x);
- a CPU-heavy function in ``process()`` → ``user-code``, and the hot lines name that
  function first;
- one dataset whose chunks are much slower, three of them on two threads (so that
  whatever the schedule one thread idles while the last runs) → the tail names the
  dataset, and the first finding is it or the user code that made the dataset slow;
- too few chunks for the threads → the tail, and the only chunk-size advice is smaller
  chunks.

Time the threads spent waiting for a CPU is the contention finding's: beside other load
(``make test-loaded`` runs the suite beside four CPU burners) the contention finding may
rightly come first, so the runs without injected contention assert the first finding
among the others.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import awkward as ak
import cloudpickle
import pytest
from coffea import processor
from coffea_run import TREE, collected_run
from conftest import local_cluster
from distributed import Client

from roastcoffea import RoastPlugin, track_metrics
from roastcoffea.demo.nanoaod import generate
from roastcoffea.demo.xrootd import serve

cloudpickle.register_pickle_by_value(sys.modules[__name__])
pytestmark = pytest.mark.cluster

#: CPU-burning processes of the contention run: three per core of the test machine.
BURNERS = 6


def heavy_loop(n: int) -> float:
    """Pure-Python CPU work: the hot function the user-code finding must name."""
    total = 0.0
    for i in range(n):
        total += (i % 7) * 0.5
    return total


#: Jet fields of the generated files: many bytes per column, few columns to build.
JET_FIELDS = ("pt", "eta", "phi", "mass", "btagDeepFlavB", "area")


class Reader(processor.ProcessorABC):
    """Sums the jets' and muons' pt (``columns="many"``: the 4-vectors of five collections;
    ``"jets"``: six jet fields); with ``loops``, runs :func:`heavy_loop` in every chunk
    (of dataset ``only`` when given)."""

    def __init__(self, loops: int = 0, only: str | None = None, columns: str = "few") -> None:
        self.loops, self.only, self.columns = loops, only, columns

    @track_metrics
    def process(self, events: Any) -> dict[str, Any]:
        columns = [events.Jet.pt, events.Muon.pt]
        if self.columns == "many":
            for name in ("Jet", "Muon", "Electron", "Photon", "Tau"):
                particles = events[name]
                columns += [particles.pt, particles.eta, particles.phi, particles.mass]
        elif self.columns == "jets":
            columns = [events.Jet[field] for field in JET_FIELDS]
        total = sum(float(ak.sum(c)) for c in columns)
        if self.loops and self.only in (None, events.metadata["dataset"]):
            total += heavy_loop(self.loops)
        return {"sum": total}

    def postprocess(self, accumulator: Any) -> Any:
        return accumulator


def fileset(paths: list[Path], dataset: str | None = None) -> dict[str, Any]:
    """One dataset per file, or all files in ``dataset``."""
    if dataset is not None:
        return {dataset: {"files": {str(p): TREE for p in paths}}}
    return {p.stem: {"files": {str(p): TREE}} for p in paths}


def diagnosed(client: Client, files: dict[str, Any], reader: Reader, chunksize: int) -> dict:
    client.register_plugin(RoastPlugin())
    return collected_run(client, files, reader, chunksize).mc.get_metrics()


def first(metrics: dict[str, Any], besides: str = "contention") -> dict[str, Any]:
    """The first finding, that of ``besides`` left out (see the module docstring)."""
    return next(f for f in metrics["diagnosis"] if f["rule"] != besides)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("causes")


@pytest.fixture(scope="module")
def lz4_files(data: Path) -> list[Path]:
    return generate(data / "lz4", 100_000, 2, compression="lz4:1", basket_events=10_000)


def test_contention_is_named_and_gets_no_io_or_chunk_remedy(
    client: Client, lz4_files: list[Path]
) -> None:
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(BURNERS)]
    try:
        m = diagnosed(client, fileset(lz4_files), Reader(loops=300_000), 12_500)
    finally:
        for burner in burners:
            burner.kill()
    top = m["diagnosis"][0]
    assert top["rule"] == "contention", m["diagnosis"]
    assert m["cpu_wait_percent"] >= 40.0
    (node,) = m["node_per_host"].values()
    assert node["runnable_mean"] > node["cores"]
    assert "other processes share the node" in top["message"]
    assert top["evidence"]["cpu_wait_seconds"] == pytest.approx(m["cpu_wait_seconds"])
    for word in ("branch", "replica", "cache", "chunk", "codec"):
        assert word not in " ".join(top["actions"]), word
    assert "chunk_size" not in top["knobs"]


def test_slow_storage_is_the_storage_finding(client: Client, data: Path) -> None:
    files = generate(data / "paced", 40_000, 2, compression="lz4:1", basket_events=5_000)
    with serve(files, bytes_per_second=1e6) as urls:
        remote = {p.stem: {"files": {urls[str(p)]: TREE}} for p in files}
        m = diagnosed(client, remote, Reader(columns="many"), 10_000)
    top = first(m)
    assert top["rule"] == "storage", m["diagnosis"]
    assert "waiting for bytes" in top["message"]
    assert m["phase_blocked_seconds"]["read"] > m["phase_cpu_wait_seconds"]["read"]


def test_lzma_files_are_the_decompression_finding_naming_lzma(client: Client, data: Path) -> None:
    # Chunks of 50,000 events reading many bytes per column: LZMA, not opening the files or
    # building arrays, is what they spend most on, quiet or beside other load.
    files = generate(data / "lzma", 300_000, 3, compression="lzma:9", basket_events=50_000)
    m = diagnosed(client, fileset(files), Reader(columns="jets"), 50_000)
    top = first(m)
    assert top["rule"] == "decompression", m["diagnosis"]
    assert top["evidence"]["codec"] == "LZMA"
    assert "LZMA" in top["message"] and "LZ4 or ZSTD" in top["message"]


def test_baskets_of_forty_chunks_are_the_basket_size_finding(client: Client, data: Path) -> None:
    files = generate(data / "baskets", 100_000, 1, compression="lzma:9", basket_events=100_000)
    m = diagnosed(client, fileset(files), Reader(columns="many"), 2_500)
    assert m["decompress_amplification"] == pytest.approx(40.0, rel=0.01)
    assert m["read_amplification"] == pytest.approx(1.0, rel=0.05)  # fetched what it used
    top = first(m)
    assert top["rule"] == "basket-size", m["diagnosis"]
    assert "a basket holds 100,000 entries, a chunk 2,500" in top["message"]
    assert top["knobs"] == {"chunk_size": "larger"}
    # Its decompression is the basket-size finding's, not offered another codec too.
    assert "decompression" not in {f["rule"] for f in m["diagnosis"]}


def test_a_heavy_function_is_the_user_code_finding_and_the_first_hot_line(
    client: Client, lz4_files: list[Path]
) -> None:
    # About 0.4 s of pure Python per chunk: the user's code outweighs the rest whatever
    # else the machine runs.
    m = diagnosed(client, fileset(lz4_files), Reader(loops=5_000_000), 12_500)
    top = first(m)
    assert top["rule"] == "user-code", m["diagnosis"]
    assert m["hot_lines"][0]["function"] == "heavy_loop", m["hot_lines"][:3]
    assert "heavy_loop" in top["message"]


def test_a_slow_dataset_is_named_by_the_tail(client: Client, data: Path) -> None:
    fast = generate(data / "fast", 40_000, 1, compression="lz4:1", basket_events=10_000)
    slow = generate(data / "slow", 30_000, 3, compression="lz4:1", basket_events=10_000, seed=7)
    # Three slow chunks on two threads, the fast ones together shorter than one of them:
    # whatever the order, one thread idles while the last slow chunk runs.
    files = {**fileset(fast, "fast"), **fileset(slow, "slow")}
    m = diagnosed(client, files, Reader(loops=20_000_000, only="slow"), 10_000)
    seconds = {d: [r["duration"] for r in m["raw_chunk_metrics"] if r["dataset"] == d]
               for d in ("fast", "slow")}  # fmt: skip
    assert sum(seconds["fast"]) < min(seconds["slow"])
    assert m["tail_cause"]["kind"] == "dataset" and m["tail_cause"]["name"] == "slow"
    tail = next(f for f in m["diagnosis"] if f["rule"] == "tail")
    assert "dataset slow's" in tail["message"] and "list it first" in tail["message"]
    # What made it slow comes first: its user code, or the tail it made (beside other load
    # the wait for a CPU takes from the one and lengthens the other).
    user = next(f for f in m["diagnosis"] if f["rule"] == "user-code")
    assert "heavy_loop" in user["message"]
    assert first(m)["rule"] in ("user-code", "tail"), m["diagnosis"]


@pytest.fixture(scope="module")
def four_threads() -> Iterator[Client]:
    with local_cluster(n_workers=1, threads_per_worker=4) as cluster, Client(cluster) as client:
        yield client


def test_too_few_chunks_give_that_and_only_that_chunk_size_advice(
    four_threads: Client, lz4_files: list[Path]
) -> None:
    m = diagnosed(four_threads, fileset(lz4_files[:1]), Reader(columns="many"), 25_000)
    assert m["num_chunks"] == 2
    top = first(m)
    assert top["rule"] == "tail" and "too few chunks" in top["message"], m["diagnosis"]
    assert top["knobs"] == {"chunk_size": "smaller"}
    ways = {f["knobs"].get("chunk_size") for f in m["diagnosis"]} - {None}
    assert ways == {"smaller"}
    assert not any("larger chunks" in a for f in m["diagnosis"] for a in f["actions"]
                   if not a.startswith("not "))  # fmt: skip
