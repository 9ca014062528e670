"""Chunk and prefix records through the plugin, with coffea's Runner on a real cluster.

Everything here is real: a LocalCluster with two worker processes (the session
cluster), the RoastPlugin pair, coffea's ``Runner`` + ``DaskExecutor`` and the
shared NanoAOD files. The expectations come from coffea (its work items and
report) and from uproot's own basket API, never from our code.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import awkward as ak
import cloudpickle
import distributed
import pytest
import uproot
from coffea import processor
from coffea.nanoevents import NanoAODSchema
from distributed import Client

from roastcoffea import (
    BaseInstrumentationContext,
    MetricsCollector,
    RoastPlugin,
    track_bytes,
    track_memory,
    track_metrics,
    track_time,
)
from roastcoffea.plugin import snapshot
from roastcoffea.records import decode_records, records_by_kind

# The processor classes travel to the workers by value, whatever their sys.path.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

# NanoAODSchema's complaints about the CMS files are not ours.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning:coffea.nanoevents.schemas")

#: Every key the issue-3 contract requires in a chunk record.
CHUNK_KEYS = {
    "kind", "v", "task_key", "prefix", "worker", "span", "dataset", "file", "uuid",
    "treename", "entry_start", "entry_stop", "num_events", "t_start", "t_end", "duration",
    "process_cpu_seconds", "task_start", "task_end", "task_duration", "mem_before_mib",
    "mem_after_mib", "mem_delta_mib", "bytes_read", "bytes_read_task", "accessed_branches",
    "num_branches_accessed", "accessed_bytes", "accessed_uncompressed_bytes",
    "branches_read_percent", "bytes_read_percent", "file_metadata", "timing", "memory",
    "bytes", "custom", "error", "timestamp",
}  # fmt: skip

#: Private key roastcoffea 0.1.2 injected into the user's output.
PRIVATE_KEY = "__roastcoffea_metrics__"

#: Slack between the worker's task clock and time.time() in the task thread.
CLOCK_SLACK = 1e-3


class CountMuons(BaseInstrumentationContext):
    """Records the chunk's muon count each time the block ends."""

    def __init__(self, events: Any) -> None:
        self.events = events

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.record_metric("muons", int(ak.sum(ak.num(self.events.Muon))))


class TrackedProcessor(processor.ProcessorABC):
    """Muon/jet sums with repeated sections; fails on ``fail_dataset``."""

    def __init__(self, fail_dataset: str | None = None) -> None:
        self.fail_dataset = fail_dataset

    @track_metrics
    def process(self, events: Any) -> dict[str, Any]:
        meta = events.metadata
        if meta["dataset"] == self.fail_dataset:
            raise RuntimeError(f"boom in {meta['dataset']}")
        with track_time(self, "select"):
            good = events.Muon[events.Muon.pt > 5]
        with track_bytes(self, events, "jets"):
            jet_pt = float(ak.sum(events.Jet.pt))
        with track_memory(self, "alloc"), track_time(self, "select"):
            n_good = int(ak.sum(ak.num(good)))
        with CountMuons(events):
            pass
        with CountMuons(events):
            pass
        key = f"{meta['dataset']}:{meta['entrystart']}"
        return {"muons": {key: int(ak.sum(ak.num(events.Muon)))}, "good": n_good, "jet_pt": jet_pt}

    def postprocess(self, accumulator: Any) -> Any:
        return accumulator


def fileset(cms_data: Path) -> dict[str, Any]:
    return {
        "dy": {"files": {str(cms_data / "nano_dy.root"): "Events"}},
        "dimuon": {"files": {str(cms_data / "nano_dimuon.root"): "Events"}},
    }


def runner(client: Client, compression: int | None) -> processor.Runner:
    executor = processor.DaskExecutor(
        client=client, compression=compression, status=False, retries=0
    )
    return processor.Runner(executor=executor, schema=NanoAODSchema, chunksize=20, savemetrics=True)


def basket_bytes(
    tree: Any, branches: list[str], start: int, stop: int, uncompressed: bool = True
) -> tuple[int, int]:
    """Compressed and uncompressed bytes of the baskets overlapping [start, stop), via uproot.

    Uncompressed sizes need a TKey read per basket; ``uncompressed=False`` skips them (0).
    """
    total_compressed = total_uncompressed = 0
    for name in branches:
        branch = tree[name]
        for number in range(branch.num_baskets):
            first, last = branch.basket_entry_start_stop(number)
            if first < stop and last > start:
                total_compressed += branch.basket_compressed_bytes(number)
                if uncompressed:
                    total_uncompressed += branch.basket_uncompressed_bytes(number)
    return total_compressed, total_uncompressed


def span_records(client: Client, span_id: str) -> tuple[list[dict], set[str]]:
    snap = snapshot(client, span_id=span_id)
    records = decode_records(snap["records"])
    assert records.skipped == 0, records.reasons
    selected = records_by_kind(records)
    return selected.chunks, selected.prefixes


@pytest.mark.parametrize(
    ("compression", "prefix"), [(1, "TrackedProcessor"), (None, "automatic_retries")]
)
def test_chunk_records_reach_the_client_through_the_plugin(
    roast: Client, cms_data: Path, compression: int | None, prefix: str
) -> None:
    run = runner(roast, compression)
    tracked = TrackedProcessor()
    state_before = dict(vars(tracked))
    with distributed.span("instrument-transport") as span_id:
        items = list(run.preprocess(fileset(cms_data), treename="Events"))
        output, report = run(items, tracked, treename="Events")
    chunks, prefixes = span_records(roast, span_id)

    # The user's objects are untouched.
    assert PRIVATE_KEY not in output
    assert vars(tracked) == state_before
    assert not any(name.startswith("_roastcoffea") for name in vars(TrackedProcessor))

    # One record per work item, with its metadata.
    assert len(chunks) == len(items) == report["chunks"]
    assert sum(c["num_events"] for c in chunks) == report["entries"]
    expected = Counter((i.dataset, i.filename, i.entrystart, i.entrystop) for i in items)
    got = Counter((c["dataset"], c["file"], c["entry_start"], c["entry_stop"]) for c in chunks)
    assert got == expected

    # The processor prefix comes from what ran, in both compression modes.
    assert prefixes == {prefix}
    assert {c["prefix"] for c in chunks} == {prefix}

    workers = set(roast.scheduler_info()["workers"])
    total_task_bytes = 0
    metadata_seen: Counter[tuple[str, str]] = Counter()
    for chunk in chunks:
        assert set(chunk) >= CHUNK_KEYS, CHUNK_KEYS - set(chunk)
        assert chunk["kind"] == "chunk" and chunk["v"] == 1 and chunk["error"] is None
        assert chunk["span"] == span_id and chunk["worker"] in workers
        assert chunk["treename"] == "Events"
        with uproot.open(chunk["file"]) as file:
            assert chunk["uuid"] == str(file.file.uuid)
            tree = file["Events"]
            start, stop = chunk["entry_start"], chunk["entry_stop"]
            assert chunk["num_events"] == stop - start

            # Whole task on the worker around process().
            assert chunk["task_duration"] >= chunk["duration"] > 0
            assert chunk["task_start"] <= chunk["t_start"] + CLOCK_SLACK
            assert chunk["t_end"] <= chunk["task_end"] + CLOCK_SLACK
            assert chunk["process_cpu_seconds"] > 0
            assert chunk["mem_before_mib"] > 0 and chunk["mem_after_mib"] > 0

            # Branches and bytes, against uproot's basket API.
            assert {"nMuon", "Muon_pt", "nJet", "Jet_pt"} <= set(chunk["accessed_branches"])
            assert chunk["num_branches_accessed"] == len(chunk["accessed_branches"])
            compressed, uncompressed = basket_bytes(tree, chunk["accessed_branches"], start, stop)
            assert chunk["accessed_bytes"] == compressed
            assert chunk["accessed_uncompressed_bytes"] == uncompressed
            assert chunk["bytes_read"] == compressed  # each basket read once, inside process()
            assert chunk["bytes"]["jets"] == basket_bytes(tree, ["nJet", "Jet_pt"], start, stop)[0]
            in_range = basket_bytes(tree, tree.keys(), start, stop, uncompressed=False)[0]
            assert math.isclose(chunk["bytes_read_percent"], 100 * compressed / in_range)
            assert math.isclose(
                chunk["branches_read_percent"],
                100 * len(chunk["accessed_branches"]) / len(tree.keys()),
            )
            if chunk["file_metadata"] is not None:
                metadata_seen[(chunk["worker"], chunk["file"])] += 1
                assert chunk["file_metadata"] == {
                    "filename": chunk["file"],
                    "compression_ratio": tree.uncompressed_bytes / tree.compressed_bytes,
                    "total_branches": len(tree.keys()),
                    "total_tree_bytes": tree.compressed_bytes,
                }
        assert chunk["bytes_read_task"] >= chunk["bytes_read"]
        total_task_bytes += chunk["bytes_read_task"] + chunk["instrument_bytes"]

        # Sections accumulate across repeated names and count their blocks.
        assert chunk["section_counts"] == {
            "timing": {"select": 2},
            "memory": {"alloc": 1},
            "bytes": {"jets": 1},
        }
        assert chunk["timing"]["select"] > 0
        assert isinstance(chunk["memory"]["alloc"], float)
        key = f"{chunk['dataset']}:{chunk['entry_start']}"
        assert chunk["custom"] == {"muons": 2 * output["muons"][key]}

    # coffea's bytesread is the file source's counter at the end of each task.
    assert total_task_bytes == report["bytesread"]
    # file_metadata once per (worker, file) in this span.
    assert set(metadata_seen.values()) == {1}
    assert {file for _, file in metadata_seen} == {i.filename for i in items}
    assert_no_instrumentation_failures(roast, len(chunks))


def assert_no_instrumentation_failures(client: Client, chunks: int) -> None:
    """The workers' plugin and instrumentation counters show no failure.

    Together the workers received at least ``chunks`` records (the counters are
    cumulative; Dask promises no spread of the chunks over the workers).
    """

    def plugin_counters(dask_worker: Any) -> dict[str, int]:
        return dask_worker.plugins["roastcoffea"].instrument_counters()

    def process_counters(dask_worker: Any) -> dict[str, Any]:
        from roastcoffea.instrument import instrumentation_counters

        return instrumentation_counters()

    counters = client.run(plugin_counters)
    assert sum(values["chunks"] for values in counters.values()) >= chunks
    for address, values in counters.items():
        for name in ("hook_errors", "encode_errors", "records_refused", "pending_overflow"):
            assert values[name] == 0, (address, name)
    for address, values in client.run(process_counters).items():
        assert values["instrument_errors"] == 0, (address, values["last_error"])
        assert values["records_local"] == 0, address


def test_failed_chunks_send_error_records_and_raise(roast: Client, cms_data: Path) -> None:
    run = runner(roast, 1)
    with distributed.span("instrument-failure") as span_id:
        items = list(run.preprocess(fileset(cms_data), treename="Events"))
        with pytest.raises(Exception, match="boom in dimuon"):
            run(items, TrackedProcessor(fail_dataset="dimuon"), treename="Events")
    chunks, prefixes = span_records(roast, span_id)
    failed = [c for c in chunks if c["error"] is not None]
    assert failed, chunks
    for chunk in failed:
        assert chunk["dataset"] == "dimuon"
        assert chunk["error"] == "RuntimeError: boom in dimuon"
        # The task's end (executing -> error) completed the record.
        assert chunk["task_duration"] >= chunk["duration"] > 0
        assert chunk["timing"] == {} and chunk["section_counts"]["timing"] == {}
    assert all(c["dataset"] == "dy" for c in chunks if c["error"] is None)
    assert prefixes == {"TrackedProcessor"}


class ClockShiftingProcessor(processor.ProcessorABC):
    """Moves the worker's scheduler_delay mid-chunk, as a heartbeat may."""

    @track_metrics
    def process(self, events: Any) -> dict[str, int]:
        distributed.get_worker().scheduler_delay += 30.0
        return {"events": len(events)}

    def postprocess(self, accumulator: Any) -> Any:
        return accumulator


class DelayShiftOnStart(distributed.WorkerPlugin):
    """Moves scheduler_delay as a task starts executing, after roastcoffea's hook has read
    it and before Dask's execute does: a heartbeat reply may land just there."""

    name = "delay-shift-on-start"

    def setup(self, worker: Any) -> None:
        self.worker = worker

    def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
        if finish == "executing":
            self.worker.scheduler_delay += 30.0


def assert_two_chunks_inside_their_tasks(client: Client, cms_data: Path, proc: Any) -> None:
    """Run two chunks on ``client``'s one worker; each chunk's times lie inside its task's."""
    run = runner(client, 1)
    files = {"dy": {"files": {str(cms_data / "nano_dy.root"): "Events"}}}
    with distributed.span("clock") as span_id:
        items = list(run.preprocess(files, treename="Events"))[:2]
        run(items, proc, treename="Events")
    chunks, _ = span_records(client, span_id)
    assert len(chunks) == 2
    for chunk in chunks:
        assert chunk["task_start"] - CLOCK_SLACK <= chunk["t_start"]
        assert chunk["t_end"] <= chunk["task_end"] + CLOCK_SLACK


def test_chunk_times_use_the_delay_dask_stamped_the_task_with(
    make_cluster: Any, cms_data: Path
) -> None:
    _, client = make_cluster(n_workers=1)
    client.register_plugin(RoastPlugin())
    client.register_plugin(DelayShiftOnStart())  # its hook runs after ours
    assert_two_chunks_inside_their_tasks(client, cms_data, TrackedProcessor())


def test_chunk_times_use_the_clock_offset_of_their_task(make_cluster: Any, cms_data: Path) -> None:
    # Dask stamps a task with the scheduler_delay read as it starts; a heartbeat
    # changing it during the task must not move the chunk outside its task.
    _, client = make_cluster(n_workers=1)
    client.register_plugin(RoastPlugin())
    assert_two_chunks_inside_their_tasks(client, cms_data, ClockShiftingProcessor())


def hand_off_a_chunk_of_no_running_task(marker: str) -> None:
    """On a worker: give the plugin a chunk record whose task is not running (already gone)."""
    plugin = distributed.get_worker().plugins["roastcoffea"]
    record = {"kind": "chunk", "v": 1, "dataset": marker, "num_events": 10, "t_start": 1.0}
    plugin.add_chunk("a-task-that-is-not-running", record)


def test_a_chunk_of_a_task_that_is_not_running_is_sent(roast: Client) -> None:
    marker = f"not-running-{uuid.uuid4()}"
    roast.submit(hand_off_a_chunk_of_no_running_task, marker, pure=False).result()
    records = decode_records(snapshot(roast)["records"])
    (chunk,) = [r for r in records if r.get("dataset") == marker]
    assert chunk["task_key"] == "a-task-that-is-not-running" and chunk["span"] is None
    assert chunk["task_duration"] is None
    assert chunk["unavailable"]["task_duration"] == "the task's end was not observed on the worker"


def test_a_chunk_that_does_not_encode_is_counted_with_its_reason(
    roast: Client, cms_data: Path
) -> None:
    # coffea's preprocessing hashes dataset names as ASCII: name the work item afterwards.
    lone = "lone\ud800surrogate"
    files = {
        "normal": {"files": {str(cms_data / "nano_dy.root"): "Events"}},
        "other": {"files": {str(cms_data / "nano_dimuon.root"): "Events"}},
    }
    run = processor.Runner(
        executor=processor.DaskExecutor(client=roast, status=False, retries=0),
        schema=NanoAODSchema,
        savemetrics=True,
    )
    items = [
        item if item.dataset == "normal" else dataclasses.replace(item, dataset=lone)
        for item in run.preprocess(files, treename="Events")
    ]
    with MetricsCollector(roast, live=False) as mc:
        output, report = run(items, TrackedProcessor(), treename="Events")
        mc.set_coffea_report(report)
    assert report["chunks"] == 2 and report["entries"] == 80
    assert len(output["muons"]) == 2
    metrics = mc.get_metrics()
    assert metrics["num_chunks"] == 1 and set(metrics["per_dataset"]) == {"normal"}
    # the chunk's record and its phase record both name the dataset
    reason = "field 'dataset' is not encodable (UnicodeEncodeError)"
    assert metrics["monitoring"]["records_lost"] == {f"chunk: {reason}": 1, f"phases: {reason}": 1}
    assert metrics["phase_tasks"] == 2  # the phases' digests do not name the dataset
