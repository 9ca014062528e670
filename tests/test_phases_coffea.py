"""Processor phases on a real cluster: coffea Runner + DaskExecutor on real ROOT files.

Each workload makes one phase large on purpose and checks that the time lands
there, against a clock of its own or Dask's accounting:

* a processor that burns known CPU in ``process()``: that time is ``user``;
* the same synthetic NanoAOD written with LZMA and with LZ4: LZMA costs more
  decompression CPU per uncompressed byte;
* every task: its phases add up to its compute time in Dask's ``startstops``;
* the files served over HTTP at a known bandwidth: the read wait is the bytes
  over that bandwidth, and the diagnosis names the storage;
* every phase: the per-worker digests add up to Dask's own span totals.
"""

from __future__ import annotations

import gc
import math
import struct
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import awkward as ak
import cloudpickle
import pytest
import uproot
from coffea import processor
from coffea.nanoevents import NanoAODSchema
from conftest import local_cluster
from distributed import Client
from roast_testing import wait_for
from throttled_http import serve

import roastcoffea
from roastcoffea import MetricsCollector, RoastPlugin, track_metrics
from roastcoffea.demo.nanoaod import generate

cloudpickle.register_pickle_by_value(sys.modules[__name__])

TREE = "Events"
#: Bandwidth of the throttled HTTP server, bytes per second.
BANDWIDTH = 4e6
#: CPU seconds each chunk of the busy processor burns in process().
BURN = 0.5


class Busy(processor.ProcessorABC):
    """Burns ``BURN`` CPU seconds per chunk and reports the wall time that took."""

    @track_metrics
    def process(self, events: Any) -> dict[str, Any]:
        start = time.perf_counter()
        end = time.thread_time() + BURN
        while time.thread_time() < end:
            pass
        meta = events.metadata
        key = f"{meta['filename']}:{meta['entrystart']}"
        return {"burned": {key: time.perf_counter() - start}, "events": len(events)}

    def postprocess(self, accumulator: Any) -> Any:
        return accumulator


class Reader(processor.ProcessorABC):
    """Reads the jet and muon kinematics: decompression and interpretation, little else."""

    def process(self, events: Any) -> dict[str, Any]:
        jets, muons = events.Jet, events.Muon
        total = sum(float(ak.sum(c)) for c in (jets.pt, jets.eta, jets.phi, muons.pt, muons.eta))
        return {"sum": {events.metadata["dataset"]: total}}

    def postprocess(self, accumulator: Any) -> Any:
        return accumulator


class TrackedReader(Reader):
    """The same reads, with the chunk records of ``@track_metrics``."""

    @track_metrics
    def process(self, events: Any) -> dict[str, Any]:
        return super().process(events)


class StackProbe(processor.ProcessorABC):
    """Returns the source files of the frames on its task's stack while ``process`` runs."""

    @track_metrics
    def process(self, events: Any) -> dict[str, Any]:
        return {"stack": {frame.filename for frame in traceback.extract_stack()}}

    def postprocess(self, accumulator: Any) -> Any:
        return accumulator


def run(
    client: Client,
    fileset: dict[str, Any],
    proc: Any,
    chunksize: int,
    compression: int | None = 1,
    **options: Any,
) -> tuple[MetricsCollector, Any]:
    warn = NanoAODSchema.warn_missing_crossrefs
    NanoAODSchema.warn_missing_crossrefs = False  # the CMS files lack some
    runner = processor.Runner(
        executor=processor.DaskExecutor(client=client, compression=compression, status=False),
        schema=NanoAODSchema,
        chunksize=chunksize,
        savemetrics=True,
    )
    try:
        with MetricsCollector(client) as mc:
            output, report = runner(fileset, processor_instance=proc, treename=TREE, **options)
            mc.set_coffea_report(report)
    finally:
        NanoAODSchema.warn_missing_crossrefs = warn
    assert mc.collector_errors == []
    return mc, output


@pytest.fixture(scope="module")
def busy(roast: Client, cms_data: Path) -> tuple[MetricsCollector, Any]:
    fileset = {"dy": {"files": {str(cms_data / "nano_dy.root"): TREE}}}
    return run(roast, fileset, Busy(), chunksize=20)


@pytest.fixture(scope="module")
def roast(client: Client) -> Client:
    from roastcoffea import RoastPlugin

    client.register_plugin(RoastPlugin())
    return client


def test_busy_user_code_is_charged_to_user(busy: tuple[MetricsCollector, Any]) -> None:
    mc, output = busy
    metrics = mc.get_metrics()
    records = metrics["raw_phase_records"]
    bound = metrics["phase_cpu_split_bound_seconds"]
    assert len(records) == len(output["burned"]) == 2
    for record in records:
        burned = output["burned"][f"{record['file']}:{record['entry_start']}"]
        assert burned <= record["wall"]["user"], (burned, record["wall"])  # one clock
        # In CPU time, which a loaded machine does not stretch: the burn and the few
        # lines around it, within the split's bound.
        assert BURN <= record["cpu"]["user"] + bound <= 1.1 * BURN + 2 * bound


def test_phases_add_up_to_each_task_compute_time(busy: tuple[MetricsCollector, Any]) -> None:
    mc, _ = busy
    metrics = mc.get_metrics()
    durations = {c["task_key"]: c["task_duration"] for c in mc.chunk_metrics}
    records = metrics["raw_phase_records"]
    assert sorted(r["task_key"] for r in records) == sorted(durations)
    for record in records:
        # The phases close their sum at the task's start by Dask's clock: they add up to
        # the time from there to the sink, inside the task's compute time (the clocks'
        # readings a few microseconds apart: 1 ms of slack).
        total = math.fsum(record["wall"].values())
        assert total == pytest.approx(record["elapsed"], rel=1e-9)
        assert total <= durations[record["task_key"]] + 1e-3
    # What no phase claims is small. Measured in the thread's own CPU time: the
    # wall time of the same code stretches when the machine is loaded.
    cpu = metrics["phase_cpu_seconds"]
    bound = metrics["phase_cpu_split_bound_seconds"]
    assert cpu["other"] <= 0.1 * math.fsum(cpu.values()) + bound


def test_worker_digests_add_up_to_dasks_span_totals(
    roast: Client, busy: tuple[MetricsCollector, Any]
) -> None:
    mc, _ = busy
    metrics = mc.get_metrics()
    span_ids = sorted(mc.run.span_ids)

    def span_totals(dask_scheduler: Any) -> dict[tuple, float]:
        spans = dask_scheduler.extensions["spans"].spans
        totals: dict[tuple, float] = {}
        for span_id in span_ids:
            for key, value in spans[span_id].cumulative_worker_metrics.items():
                totals[key] = totals.get(key, 0.0) + value
        return totals

    async def heartbeat(dask_worker: Any) -> None:
        # Dask's span totals move with the heartbeats: the plugin files its phase
        # sums at one, which Dask's spans receive at the next.
        await dask_worker.heartbeat()
        await dask_worker.heartbeat()

    roast.run(heartbeat)
    dask = roast.run_on_scheduler(span_totals)
    per_worker = metrics["phase_per_worker"]
    for phase, seconds in metrics["phase_wall_seconds"].items():
        theirs = math.fsum(
            v
            for (context, _, activity, unit), v in dask.items()
            if context == "execute" and activity == f"phase:{phase}" and unit == "wall-seconds"
        )
        ours = math.fsum(w.get(phase, 0.0) for w in per_worker.values())
        assert ours == pytest.approx(theirs, rel=1e-9, abs=1e-12)
        assert seconds == pytest.approx(theirs, rel=1e-9, abs=1e-12)
    assert metrics["phase_tasks"] == 2


def phase_sums(records: list[dict[str, Any]], kind: str) -> dict[str, float]:
    """Each phase's sum over the phase records (a phase a record did not measure left out)."""
    phases = {p for r in records for p in r[kind]}
    return {p: math.fsum(r[kind][p] for r in records if r[kind][p] is not None) for p in phases}


def assert_digests_match_records(metrics: dict[str, Any], tasks: int) -> None:
    """The span digests (filed by the worker plugin) hold what the phase records say."""
    records = metrics["raw_phase_records"]
    assert metrics["phase_tasks"] == len(records) == tasks
    for kind in ("wall", "cpu"):
        digested = metrics[f"phase_{kind}_seconds"]
        for phase, total in phase_sums(records, kind).items():
            assert digested[phase] == pytest.approx(total, rel=1e-9, abs=1e-12), (kind, phase)


def test_the_span_digests_hold_the_sums_of_the_phase_records(
    busy: tuple[MetricsCollector, Any],
) -> None:
    assert_digests_match_records(busy[0].get_metrics(), tasks=2)


def test_a_task_whose_records_overflow_files_its_phase_digests_once(
    make_cluster: Callable[..., tuple[Any, Client]], cms_data: Path
) -> None:
    # With no room for held records, every task's records go out at once from its
    # thread and its digests are filed from the event loop. A cluster of its own:
    # the shared workers' counters must not see the overflow.
    from roastcoffea import RoastPlugin

    _, own = make_cluster(n_workers=1)
    own.register_plugin(RoastPlugin())

    def no_room() -> None:
        from roastcoffea.plugin.worker import outbox

        outbox.MAX_PENDING_CHUNKS = 0

    def counters(dask_worker: Any) -> dict[str, int]:
        return dask_worker.plugins["roastcoffea"].instrument_counters()

    own.run(no_room)
    fileset = {"dy": {"files": {str(cms_data / "nano_dy.root"): TREE}}}
    mc, _ = run(own, fileset, TrackedReader(), chunksize=20)
    metrics = mc.get_metrics()
    assert_digests_match_records(metrics, tasks=metrics["num_chunks"])
    (values,) = own.run(counters).values()
    # Each task's chunk record and phase record went out at once.
    assert values["pending_overflow"] == 2 * metrics["num_chunks"]
    assert values["hook_errors"] == 0


def test_dask_thread_time_is_left_as_it_was(busy: tuple[MetricsCollector, Any]) -> None:
    # The phases use their own units: Dask still charges the burned CPU to thread-cpu.
    metrics = busy[0].get_metrics()
    assert metrics["processor_cpu_time_seconds"] >= 2 * BURN


@pytest.fixture(scope="module")
def codecs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    # The CPU clock read at every switch: each codec's CPU is exact, whatever preempts
    # the thread (with an interval, a window's CPU is split by wall, within a bound).
    with local_cluster() as cluster, Client(cluster) as client:
        client.register_plugin(RoastPlugin(phase_cpu_interval=0))
        yield measure_codecs(client, tmp_path_factory.mktemp("codecs"))


def measure_codecs(client: Client, directory: Path) -> dict[str, Any]:
    fileset = {}
    for codec in ("lzma:1", "lz4:1"):
        (path,) = generate(
            directory / codec.replace(":", "_"),
            6000,
            1,
            compression=codec,
            basket_events=2000,
            processes=1,
        )
        fileset[codec] = {"files": {str(path): TREE}}
    mc, _ = run(client, fileset, TrackedReader(), chunksize=2000)
    return mc.get_metrics()


def test_lzma_costs_more_decompression_per_byte_than_lz4(codecs: dict[str, Any]) -> None:
    assert codecs["phase_cpu_split_bound_seconds"] == 0.0
    per_codec = codecs["decompress_codecs"]
    assert set(per_codec) == {"LZMA", "LZ4"}
    lzma, lz4 = per_codec["LZMA"], per_codec["LZ4"]
    assert lzma["bytes"] > 0 and lz4["bytes"] > 0
    assert lzma["cpu_seconds"] / lzma["bytes"] > 2 * lz4["cpu_seconds"] / lz4["bytes"]
    assert codecs["phase_per_dataset"].keys() == {"lzma:1", "lz4:1"}
    assert codecs["decompress_throughput_mb_s"] > 0 and codecs["interpret_rate_hz"] > 0


def key_length(path: str, seek: int) -> int:
    """``fKeylen`` of the TKey at ``seek``: after fNbytes, fVersion, fObjlen and fDatime."""
    with open(path, "rb") as file:
        file.seek(seek + 14)
        return struct.unpack(">H", file.read(2))[0]


def test_bytes_match_the_baskets_each_chunk_read(codecs: dict[str, Any]) -> None:
    # uproot's own accounting, through the chunk records: the compressed bytes (TKey
    # included) and fObjlen + fKeylen of the accessed branches' baskets in the chunk's range.
    chunks = {c["task_key"]: c for c in codecs["raw_chunk_metrics"]}
    records = codecs["raw_phase_records"]
    assert len(records) == len(chunks) == 6
    for record in records:
        chunk = chunks[record["task_key"]]
        assert record["read_bytes"] == chunk["accessed_bytes"]
        baskets = chunk["accessed_baskets"]
        keys = sum(key_length(chunk["file"], seek) for seek in baskets["id"])
        produced = sum(out for _, _, _, out in record["codecs"].values())
        assert produced == chunk["accessed_uncompressed_bytes"] - keys


def test_the_cpu_interval_setting_reaches_the_workers_clocks(
    make_cluster: Any, cms_data: Path
) -> None:
    # Read at every switch, no window is shared by two phases: the split's bound is 0.
    from roastcoffea import RoastPlugin
    from roastcoffea.instrument import phases

    _, own = make_cluster(n_workers=1)
    own.register_plugin(RoastPlugin(phase_cpu_interval=0))
    intervals = own.run(lambda: phases._cpu_interval)
    assert list(intervals.values()) == [0.0]
    fileset = {"dy": {"files": {str(cms_data / "nano_dy.root"): TREE}}}
    mc, _ = run(own, fileset, TrackedReader(), chunksize=10)
    metrics = mc.get_metrics()
    assert metrics["phase_tasks"] == 4
    assert metrics["phase_cpu_split_bound_seconds"] == 0.0


def test_the_workers_clocks_read_the_cpu_clock_every_millisecond_by_default(roast: Client) -> None:
    from roastcoffea.instrument import phases

    assert set(roast.run(lambda: phases._cpu_interval).values()) == {0.001}


def test_uncompressed_output_has_no_output_phase(roast: Client, cms_data: Path) -> None:
    fileset = {"dy": {"files": {str(cms_data / "nano_dy.root"): TREE}}}
    mc, _ = run(roast, fileset, Reader(), chunksize=40, compression=None)
    metrics = mc.get_metrics()
    assert metrics["output_phase_seconds"] is None
    assert "compression is off" in metrics["unavailable"]["output_phase_seconds"]
    assert "output" not in metrics["phase_wall_seconds"]
    assert metrics["phase_tasks"] == 1


def test_the_monitoring_leaves_no_frame_on_the_task_s_stack(roast: Client, cms_data: Path) -> None:
    # Dask's profiler walks a task's stack every 10 ms: the task, work-function and
    # @track_metrics wrappers must not be on it while the processor runs.
    fileset = {"dy": {"files": {str(cms_data / "nano_dy.root"): TREE}}}
    mc, output = run(roast, fileset, StackProbe(), chunksize=20)
    assert mc.get_metrics()["phase_tasks"] == 2  # measured by the phase clock and
    assert mc.get_metrics()["num_chunks"] == 2  # by @track_metrics
    package = str(Path(roastcoffea.__file__).parent)
    assert any("coffea/processor" in path for path in output["stack"])
    assert [path for path in output["stack"] if path.startswith(package)] == []


@pytest.fixture(scope="module")
def remote_and_local(roast: Client, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    directory = tmp_path_factory.mktemp("remote")
    (path,) = generate(directory, 20000, 1, compression="lz4:1", basket_events=5000, processes=1)
    local = {"local": {"files": {str(path): TREE}}}
    # The workers' heaps hold the module's earlier runs: a full garbage collection landing in
    # a read wait would be charged to it (truly: the task waited that long).
    roast.run(gc.collect)
    out = {"local": run(roast, local, Reader(), chunksize=10000)[0].get_metrics()}
    with serve(directory, BANDWIDTH) as (url, link):
        remote = {"remote": {"files": {url + path.name: TREE}}}
        options = {"uproot_options": {"handler": uproot.source.http.HTTPSource}}
        out["remote"] = run(roast, remote, Reader(), chunksize=10000, **options)[0].get_metrics()
    out["rate"] = link.rate
    return out


def test_remote_read_wait_holds_the_time_the_bytes_took_to_arrive(
    remote_and_local: dict[str, Any],
) -> None:
    remote, rate = remote_and_local["remote"], remote_and_local["rate"]
    # The server paces at BANDWIDTH; ``rate`` is what its responses took by its own clock.
    # While the bytes arrive the task's thread waits, but for the decompression of the
    # chunks already there (LZ4: about a thousand times faster than this link): the read
    # wait is at least 80% of the transfer. A loaded machine only lengthens it (each wait
    # ends when the thread is scheduled), up to the task's whole time.
    assert rate <= 1.01 * BANDWIDTH
    assert remote["phase_read_bytes"] > 1e6
    transfer = remote["phase_read_bytes"] / rate
    read = remote["phase_wall_seconds"]["read"]
    assert 0.8 * transfer <= read <= sum(remote["phase_wall_seconds"].values())
    assert remote["read_bandwidth_mb_s"] <= rate / 1e6 / 0.8
    assert "storage" in [finding["rule"] for finding in remote["diagnosis"]]


def test_local_files_read_the_same_baskets_without_the_links_wait(
    remote_and_local: dict[str, Any],
) -> None:
    local, remote = remote_and_local["local"], remote_and_local["remote"]
    # The same baskets, waited for from the page cache instead of the throttled server.
    # How long a local wait lasts depends on the machine's load (thread hand-offs), so
    # only its bytes are compared.
    assert local["phase_read_bytes"] == remote["phase_read_bytes"]
    assert local["phase_wall_seconds"]["read"] <= sum(local["phase_wall_seconds"].values())


def test_the_live_stream_carries_the_phases_of_the_records(roast: Client, cms_data: Path) -> None:
    events: list[tuple[float, dict]] = []
    roast.subscribe_topic("roastcoffea", events.append)
    try:
        assert wait_for(lambda: len(events), lambda n: n >= 1, timeout=30) >= 1  # the baseline
        fileset = {"dy": {"files": {str(cms_data / "nano_dy.root"): TREE}}}
        wall = run(roast, fileset, Reader(), chunksize=20)[0].get_metrics()["phase_wall_seconds"]

        def streamed() -> dict[str, float]:
            sums: dict[str, float] = {}
            for _, msg in list(events):
                for phase, seconds in msg.get("phases", {}).items():
                    sums[phase] = sums.get(phase, 0.0) + seconds
            return sums

        def complete(sums: dict[str, float]) -> bool:
            return all(math.isclose(sums.get(p, 0.0), s, rel_tol=1e-9) for p, s in wall.items())

        assert complete(wait_for(streamed, complete, timeout=30))
    finally:
        roast.unsubscribe_topic("roastcoffea")
        roast._event_handlers.pop("roastcoffea", None)


def test_with_the_phase_clock_off_the_chunks_are_measured_and_the_phases_say_why_not(
    make_cluster: Callable[..., tuple[Any, Client]], cms_data: Path
) -> None:
    from roastcoffea import RoastPlugin

    _, own = make_cluster(n_workers=1)
    own.register_plugin(RoastPlugin(phases=False))

    def hooked(dask_worker: Any) -> tuple[bool, str | None]:
        from roastcoffea.instrument import _phase_hooks

        plugin = dask_worker.plugins["roastcoffea"]
        return _phase_hooks.installed(), plugin.phase_hooks_error

    assert list(own.run(hooked).values()) == [(False, "turned off (RoastPlugin phases=False)")]
    fileset = {"dy": {"files": {str(cms_data / "nano_dy.root"): TREE}}}
    mc, _ = run(own, fileset, TrackedReader(), chunksize=20)
    metrics = mc.get_metrics()
    assert metrics["num_chunks"] == len(mc.chunk_metrics) == 2
    assert metrics["raw_phase_records"] is None and metrics["phase_wall_seconds"] is None
    assert "phases=False" in metrics["unavailable"]["phase_wall_seconds"]
    assert "RoastPlugin registered with phases=False: no phase metrics" in mc.notes
    own_cost = metrics["instrument_seconds"] / len(mc.chunk_metrics)
    assert metrics["monitoring_seconds_per_chunk"] == pytest.approx(own_cost)
    # The byte accounting reads the basket headers itself when no hook logged them.
    assert all(c["accessed_uncompressed_bytes"] > 0 for c in mc.chunk_metrics)
