"""The instrumentation API without a cluster: sections, threads, records, local store.

The transport through a real cluster is in test_records_transport.py. Here
``process()`` runs in this process, where no worker plugin is reachable, so the
records land in the process-local store and are drained by span.
"""

from __future__ import annotations

import math
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import awkward as ak
import dask
import msgpack
import numpy as np
import pytest
import uproot
from coffea import processor
from coffea.nanoevents import NanoAODSchema, NanoEventsFactory
from coffea.processor.executor import WorkItem
from dask._task_spec import DataNode, Task, Tuple
from roast_testing import run_in_threads

from roastcoffea.instrument import (
    BaseInstrumentationContext,
    instrumentation_counters,
    running,
    track_bytes,
    track_memory,
    track_metrics,
    track_section,
    track_time,
)
from roastcoffea.instrument.running import set_lookup
from roastcoffea.plugin.task import running_task
from roastcoffea.plugin.worker.work_items import holds_work_item
from roastcoffea.records import (
    decode_record,
    decode_records,
    drain_local_records,
    encode_record,
    local_record_stats,
    lost_record,
    queue_local,
    records_by_kind,
)

# NanoAODSchema's complaints about the CMS files are not ours.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning:coffea.nanoevents.schemas")


@contextmanager
def in_span() -> Iterator[str]:
    """A fresh span annotation, as ``distributed.span`` sets it (without a client), with
    the running task's lookup the plugin hands the instrumentation when a run opens."""
    set_lookup(running_task)
    span_id = str(uuid.uuid4())
    with dask.annotate(span={"name": ("instrument-test",), "ids": (span_id,)}):
        yield span_id


class FakeEvents:
    """Events with coffea's metadata but no file behind them."""

    def __init__(self, n: int, dataset: str = "fake") -> None:
        self.n = n
        self.metadata = {
            "dataset": dataset,
            "filename": f"/nowhere/{dataset}.root",
            "treename": "Events",
            "entrystart": 0,
            "entrystop": n,
            "fileuuid": uuid.UUID(int=7).bytes,
        }

    def __len__(self) -> int:
        return self.n


class Note(BaseInstrumentationContext):
    """Records one value on exit."""

    def __init__(self, name: str, value: Any) -> None:
        self.name, self.value = name, value

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.record_metric(self.name, self.value)


class Sections(processor.ProcessorABC):
    """Repeats sections and custom metrics; raises when asked to."""

    tag = "class attribute"

    @track_metrics
    def process(self, events: Any, fail: bool = False) -> dict[str, Any]:
        for _ in range(3):
            with track_time(self, "loop"):
                pass
        with track_section(self, "loop"), track_memory(self, "mem"):
            pass
        with track_bytes(self, events, "read"):
            pass
        with Note("count", 2):
            pass
        with Note("count", np.int64(3)):
            pass
        with Note("label", "first"), Note("label", "second"):
            pass
        if fail:
            raise ValueError("bad chunk")
        return {"n": len(events)}

    def postprocess(self, accumulator: Any) -> Any:
        return accumulator


# --- outside a chunk ---------------------------------------------------------------


def test_sections_outside_a_chunk_do_nothing() -> None:
    proc = Sections()
    before = dict(vars(proc))
    with track_time(proc, "a"), track_section(proc, "b"), track_memory(proc, "c"):
        pass
    with track_bytes(proc, object(), "d"):
        pass
    context = Note("x", 1)
    assert not context.active
    assert context.record_metric("x", 1) is False
    with context as entered:
        assert entered is context
    assert vars(proc) == before


def test_wrong_arguments_raise_type_errors() -> None:
    with pytest.raises(TypeError, match="section names are str"), track_time(None, 3):
        pass
    with pytest.raises(TypeError, match="metric names are str"):
        BaseInstrumentationContext().record_metric(1, 2)
    with pytest.raises(TypeError, match="must be a number, bool, str or None"):
        BaseInstrumentationContext().record_metric("x", [1])


# --- one chunk in this process ---------------------------------------------------


def test_a_chunk_record_goes_to_the_local_store() -> None:
    proc = Sections()
    before = dict(vars(proc))
    events = FakeEvents(12)
    with in_span() as span_id:
        result = proc.process(events)
    assert result == {"n": 12}
    assert vars(proc) == before and Sections.tag == "class attribute"
    [record] = drain_local_records({span_id})
    assert record["kind"] == "chunk" and record["span"] == span_id
    assert record["dataset"] == "fake" and record["num_events"] == 12
    assert (record["entry_start"], record["entry_stop"]) == (0, 12)
    assert record["uuid"] == str(uuid.UUID(int=7))
    assert record["error"] is None
    assert record["duration"] > 0 and record["t_end"] >= record["t_start"]
    assert record["worker"] is None and record["task_key"] is None
    # Without a file source nothing byte-related is invented.
    for key in ("bytes_read", "accessed_branches", "task_duration", "bytes_read_task"):
        assert record[key] is None
        assert record["unavailable"][key]
    # Sections accumulate, and count their blocks.
    assert record["section_counts"] == {
        "timing": {"loop": 4},
        "memory": {"mem": 1},
        "bytes": {"read": 1},
    }
    assert record["timing"]["loop"] > 0
    assert record["bytes"] == {"read": None}
    # Numbers add up, other values replace.
    assert record["custom"] == {"count": 5, "label": "first"}


def test_without_the_plugins_lookup_a_chunk_belongs_to_no_task(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The instrumentation knows no Dask: until the plugin hands it the running task's
    lookup, a record has no span even inside one, and still reaches the local store."""
    monkeypatch.setattr(running, "_lookup", None)
    drain_local_records(None)  # what earlier tests left
    with dask.annotate(span={"name": ("instrument-test",), "ids": (str(uuid.uuid4()),)}):
        Sections().process(FakeEvents(4))
    [record] = drain_local_records(None)
    assert record["span"] is None and record["worker"] is None and record["num_events"] == 4


def test_a_failed_chunk_records_the_error_and_reraises() -> None:
    before = instrumentation_counters()["chunk_errors"]
    with in_span() as span_id, pytest.raises(ValueError, match="bad chunk"):
        Sections().process(FakeEvents(3), fail=True)
    [record] = drain_local_records({span_id})
    assert record["error"] == "ValueError: bad chunk"
    assert record["section_counts"]["timing"] == {"loop": 4}
    assert instrumentation_counters()["chunk_errors"] == before + 1


def test_concurrent_chunks_in_threads_stay_apart() -> None:
    barrier = threading.Barrier(2)
    spans: dict[str, str] = {}
    errors: list[BaseException] = []

    class Waits(processor.ProcessorABC):
        @track_metrics
        def process(self, events: Any) -> int:
            name = events.metadata["dataset"]
            with track_time(self, name):
                barrier.wait(timeout=10)  # both chunks are active here at once
                with Note(name, 1):
                    pass
                barrier.wait(timeout=10)
            return len(events)

        def postprocess(self, accumulator: Any) -> Any:
            return accumulator

    shared = Waits()  # one instance for both threads, as with processor_compression=None

    def work(name: str) -> None:
        try:
            with in_span() as span_id:
                spans[name] = span_id
                shared.process(FakeEvents(5, dataset=name))
        except BaseException as exc:
            errors.append(exc)

    run_in_threads(work, ("a", "b"))
    assert not errors
    for name in ("a", "b"):
        [record] = drain_local_records({spans[name]})
        assert record["dataset"] == name
        assert set(record["timing"]) == {name}
        assert record["custom"] == {name: 1}


# --- real coffea, iterative executor ------------------------------------------------


class MuonJets(processor.ProcessorABC):
    @track_metrics
    def process(self, events: Any) -> dict[str, Any]:
        with track_bytes(self, events, "muons"):
            n = int(ak.sum(ak.num(events.Muon)))
        with track_bytes(self, events, "muons"):
            pt = float(ak.sum(events.Muon.pt))
        return {"muons": n, "pt": pt}

    def postprocess(self, accumulator: Any) -> Any:
        return accumulator


@pytest.fixture
def fresh_tree_indexes(monkeypatch: pytest.MonkeyPatch) -> None:
    """No tree index or basket header known in this process from an earlier test."""
    from roastcoffea.instrument import _baskets, _measure

    monkeypatch.setattr(_measure, "TREE_INDEXES", _baskets.TreeIndexes(1 << 20))


@pytest.mark.usefixtures("fresh_tree_indexes")
def test_iterative_executor_records_are_drained_by_span(cms_data: Path) -> None:
    fileset = {"dy": {"files": {str(cms_data / "nano_dy.root"): "Events"}}}
    run = processor.Runner(
        executor=processor.IterativeExecutor(),
        schema=NanoAODSchema,
        chunksize=20,
        savemetrics=True,
    )
    items = list(run.preprocess(fileset, treename="Events"))
    with in_span() as span_id:
        output, report = run(items, MuonJets(), treename="Events")
    records = drain_local_records({span_id})
    assert "__roastcoffea_metrics__" not in output
    assert len(records) == len(items) == report["chunks"]
    assert sum(r["num_events"] for r in records) == report["entries"]
    assert sorted((r["dataset"], r["entry_start"], r["entry_stop"]) for r in records) == sorted(
        (i.dataset, i.entrystart, i.entrystop) for i in items
    )
    for record in records:
        assert record["task_duration"] is None and "task_duration" in record["unavailable"]
        assert record["accessed_branches"] == ["nMuon", "Muon_pt"]
        with uproot.open(record["file"]) as file:
            tree = file["Events"]
            compressed = sum(
                tree[name].basket_compressed_bytes(number)
                for name in ("nMuon", "Muon_pt")
                for number in range(tree[name].num_baskets)
            )
        # Two blocks under one name: the bytes of both add up to what the chunk read.
        assert record["bytes"]["muons"] == record["bytes_read"] == compressed
        assert record["section_counts"]["bytes"] == {"muons": 2}
        assert math.isclose(
            record["branches_read_percent"], 100 * 2 / record_total_branches(record, cms_data)
        )
    with_metadata = [r for r in records if r["file_metadata"] is not None]
    assert sorted(r["file"] for r in with_metadata) == sorted({i.filename for i in items})
    assert local_record_stats()["refused"] == 0
    # Both chunks read the file's one basket per branch: its headers are read once.
    assert [r["instrument_bytes"] > 0 for r in records] == [True, False]


def test_basket_sizes_in_a_measured_task_come_from_the_tkeys_uproot_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the phase hooks, a chunk's new baskets cost no header read; the bytes stay exact."""
    from roastcoffea.demo.nanoaod import generate
    from roastcoffea.instrument import _baskets, _measure, _phase_hooks, phases

    (path,) = generate(tmp_path, 6000, 1, basket_events=2000, processes=1)
    starts = (0, 2000, 4000)  # every chunk has baskets of its own

    def chunk(start: int) -> Any:
        metadata = {"dataset": "own baskets", "filename": str(path), "treename": "Events",
                    "entrystart": start, "entrystop": start + 2000}  # fmt: skip
        factory = NanoEventsFactory.from_root(
            {str(path): "Events"},
            schemaclass=NanoAODSchema,
            metadata=metadata,
            access_log=[],
            mode="virtual",
            entry_start=start,
            entry_stop=start + 2000,
        )
        return MuonJets().process(factory.events())

    def records(measured: bool) -> list[dict[str, Any]]:
        monkeypatch.setattr(_measure, "TREE_INDEXES", _baskets.TreeIndexes(1 << 20))
        with in_span() as span_id:
            for start in starts:
                phases.run_task(chunk, (start,), {}) if measured else chunk(start)
        return sorted(drain_local_records({span_id}), key=lambda r: r["entry_start"])

    read = records(measured=False)
    phases.set_sink(lambda task: None)
    _phase_hooks.install()
    try:
        parsed = records(measured=True)
    finally:
        _phase_hooks.uninstall()
        phases.set_sink(None)

    fields = ("accessed_baskets", "accessed_bytes", "accessed_uncompressed_bytes", "bytes_read")
    with uproot.open(path) as file:
        tree = file["Events"]
        for start, plain, hooked in zip(starts, read, parsed, strict=True):
            assert [plain[f] for f in fields] == [hooked[f] for f in fields]
            assert hooked["accessed_uncompressed_bytes"] == sum(
                tree[name].basket_uncompressed_bytes(number)
                for name in hooked["accessed_branches"]
                for number in range(tree[name].num_baskets)
                if tree[name].basket_entry_start_stop(number)[0] == start
            )
    # Without the task's log each chunk reads a 16-byte TKey per new basket; with it,
    # only the first chunk requests anything (the tree, to index its baskets).
    assert [r["instrument_bytes"] for r in read[1:]] == [
        16 * len(r["accessed_baskets"]["id"]) for r in read[1:]
    ]
    assert [r["instrument_bytes"] for r in parsed[1:]] == [0, 0]
    assert parsed[0]["instrument_bytes"] > 0


def test_a_parsed_tkey_is_taken_only_when_it_matches_its_basket(cms_data: Path) -> None:
    from roastcoffea.instrument._baskets import TreeIndex

    with uproot.open(cms_data / "nano_dy.root") as file:
        tree = file["Events"]
        index = TreeIndex(tree)
        baskets, _ = index.chunk_baskets(["nMuon", "Muon_pt"], 0, 10)
        (taken, read) = index.seeks[baskets].tolist()  # one basket each, in file order
        nbytes = index.compressed[baskets].tolist()
        parsed = {taken: (nbytes[0], 12345), read: (nbytes[1] + 1, 999)}  # another basket's
        sizes = {
            int(tree[name].member("fBasketSeek")[0]): tree[name].basket_uncompressed_bytes(0)
            for name in ("nMuon", "Muon_pt")
        }
        source = file.file.source
        before = source.num_requested_bytes
        fields = index.record_fields(baskets, (0, 10), source, parsed)
        # The matching entry is trusted as parsed; the other basket's header is read.
        assert fields["accessed_baskets"]["uncompressed"] == [12345, sizes[read]]
        assert source.num_requested_bytes - before == 16


def test_the_used_bytes_are_the_chunks_entries_share_of_each_basket(cms_data: Path) -> None:
    from roastcoffea.instrument._baskets import TreeIndex

    names = ["nMuon", "Muon_pt"]
    with uproot.open(cms_data / "nano_dy.root") as file:
        tree = file["Events"]
        index = TreeIndex(tree)
        first_stop = tree["nMuon"].basket_entry_start_stop(0)[1]
        for start, stop in ((0, 10), (first_stop - 5, first_stop + 5)):
            baskets, _ = index.chunk_baskets(names, start, stop)
            fields = index.record_fields(baskets, (start, stop), file.file.source)
            used = entries = 0.0
            kept = 0
            for name in names:
                branch = tree[name]
                for number in range(branch.num_baskets):
                    first, last = branch.basket_entry_start_stop(number)
                    inside = min(last, stop) - max(first, start)
                    if inside > 0:
                        used += branch.basket_uncompressed_bytes(number) * inside / (last - first)
                        entries += last - first
                        kept += 1
            assert fields["accessed_used_bytes"] == round(used)
            assert fields["accessed_unit_entries"] == pytest.approx(entries / kept)
            assert fields["accessed_used_bytes"] < fields["accessed_uncompressed_bytes"]


def record_total_branches(record: dict[str, Any], cms_data: Path) -> int:
    with uproot.open(record["file"]) as file:
        return len(file["Events"].keys())


# --- records ---------------------------------------------------------------------


def test_encode_decode_round_trip_with_plain_values() -> None:
    record = {
        "kind": "chunk",
        "v": 1,
        "n": np.int64(5),
        "x": np.float32(0.5),
        "t": (1, 2),
        "none": None,
        "nested": {"a": [1.5, "s"]},
    }
    [decoded] = decode_records([{"data": encode_record(record), "worker": "w"}])
    assert decoded == {
        "kind": "chunk",
        "v": 1,
        "n": 5,
        "x": 0.5,
        "t": [1, 2],
        "none": None,
        "nested": {"a": [1.5, "s"]},
    }
    assert type(decoded["n"]) is int
    with pytest.raises(TypeError, match="plain data"):
        encode_record({"kind": "chunk", "v": 1, "bad": object()})
    with pytest.raises(TypeError, match="a record is a dict"):
        encode_record([1])  # type: ignore[arg-type]


def test_a_record_is_encoded_alone_after_a_failure_and_in_every_thread() -> None:
    # the packer's buffer is kept per thread: nothing of a failed or other
    # thread's record may reach a record's bytes
    record = {"kind": "prefix", "v": 1, "prefix": "p", "span": "s", "names": ["x" * 40] * 900}
    expected = msgpack.packb(record, use_bin_type=True)
    with pytest.raises(TypeError, match="plain data"):
        encode_record({"kind": "chunk", "v": 1, "names": ["y" * 40] * 900, "bad": object()})
    assert encode_record(record) == expected  # 36 KB: past the buffer's first size

    exact: list[bool] = []

    def encode_many(seed: int) -> None:
        mine = {**record, "prefix": f"p{seed}"}
        expected = msgpack.packb(mine, use_bin_type=True)
        exact.extend(encode_record(mine) == expected for _ in range(200))

    run_in_threads(encode_many, range(8))
    assert len(exact) == 8 * 200 and all(exact)


def test_decode_records_skips_and_counts_what_it_cannot_read() -> None:
    good = encode_record({"kind": "prefix", "v": 1, "prefix": "p", "span": "s"})
    entries = [
        {"data": good},
        {"data": b"\xc1"},  # never valid msgpack
        {"data": msgpack.packb([1, 2])},
        {"data": msgpack.packb({"kind": "other", "v": 1})},
        {"data": msgpack.packb({"kind": "chunk", "v": 2})},
        {"no data": 1},
        good,
    ]
    decoded = decode_records(entries)
    assert len(decoded) == 2 and decoded.skipped == 5
    assert sum(decoded.reasons.values()) == 5


def test_records_by_kind() -> None:
    records = [
        {"kind": "chunk", "v": 1, "span": "a", "n": 1},
        {"kind": "chunk", "v": 1, "span": "b", "n": 2},
        {"kind": "prefix", "v": 1, "span": "a", "prefix": "P"},
        {"kind": "prefix", "v": 1, "span": "b", "prefix": "Q"},
        {"kind": "phases", "v": 1, "span": "b", "n": 4},
        lost_record("chunk", "field 'dataset' is not encodable", "w", "a"),
        lost_record("chunk", "field 'dataset' is not encodable", "w", "a"),
        lost_record("phases", "the worker plugin failed", "w", "b"),
    ]
    chunks, prefixes, phases, lost = records_by_kind(records)
    assert [c["n"] for c in chunks] == [1, 2] and prefixes == {"P", "Q"}
    assert [p["n"] for p in phases] == [4]
    assert lost == {
        "chunk: field 'dataset' is not encodable": 2,
        "phases: the worker plugin failed": 1,
    }
    assert decode_record(encode_record(lost_record("nope", "x", None, None)))["lost"] == "unknown"


def test_drain_takes_only_the_requested_spans() -> None:
    mine, other = str(uuid.uuid4()), str(uuid.uuid4())
    assert queue_local({"kind": "chunk", "v": 1, "span": mine, "n": 1})
    assert queue_local({"kind": "chunk", "v": 1, "span": other, "n": 2})
    assert [r["n"] for r in drain_local_records({mine})] == [1]
    assert drain_local_records({mine}) == []
    assert [r["n"] for r in drain_local_records({other})] == [2]


# --- work item detection in task specs ---------------------------------------------


def test_work_items_are_found_in_task_specs() -> None:
    item = WorkItem("d", "f.root", "Events", 0, 10, b"\x00" * 16)

    def f(*args: Any) -> None:
        return None

    assert holds_work_item(Task("k", f, DataNode(None, item)))
    assert holds_work_item(Task("k", f, Tuple(item, DataNode(None, b"heavy"))))
    assert holds_work_item(Task("k", f, 1, item=item))
    assert not holds_work_item(Task("k", f, "Events", 3, DataNode(None, [1, 2])))
    assert not holds_work_item(Task("k", f, *range(20), item))  # beyond the scan width


@pytest.mark.usefixtures("fresh_tree_indexes")
def test_events_opened_from_a_path_are_measured_too(cms_data: Path) -> None:
    """Without coffea's Runner the factory holds a ReadOnlyFile, not a directory."""
    path = str(cms_data / "nano_dimuon.root")

    def events() -> Any:
        factory = NanoEventsFactory.from_root(
            {path: "Events"},
            schemaclass=NanoAODSchema,
            metadata={"dataset": "direct", "filename": path, "treename": "Events",
                      "entrystart": 10, "entrystop": 30},
            access_log=[],
            mode="virtual",
            entry_start=10,
            entry_stop=30,
        )  # fmt: skip
        return factory.events()

    with in_span() as span_id:
        MuonJets().process(events())
        MuonJets().process(events())
    first, record = drain_local_records({span_id})
    assert first["file_metadata"] is not None and record["file_metadata"] is None
    with uproot.open(path) as file:
        tree = file["Events"]
        compressed = uncompressed = 0
        for name in ("nMuon", "Muon_pt"):
            for number in range(tree[name].num_baskets):
                low, high = tree[name].basket_entry_start_stop(number)
                if low < 30 and high > 10:
                    compressed += tree[name].basket_compressed_bytes(number)
                    uncompressed += tree[name].basket_uncompressed_bytes(number)
        assert first["file_metadata"]["total_tree_bytes"] == tree.compressed_bytes
    assert record["uuid"] is None and record["unavailable"]["uuid"]
    assert record["num_events"] == 20
    assert record["accessed_bytes"] == record["bytes_read"] == compressed
    assert record["accessed_uncompressed_bytes"] == uncompressed
    # The first chunk read one 16-byte TKey header per basket and looked up the tree;
    # the same baskets' sizes are known in this process from then on.
    assert first["instrument_bytes"] > 16 * len(first["accessed_branches"])
    assert record["instrument_bytes"] == 0


def test_the_instrumentation_is_exported_at_the_top_level() -> None:
    import roastcoffea

    for name in ("BaseInstrumentationContext", "track_bytes", "track_memory", "track_metrics"):
        assert getattr(roastcoffea, name) is globals()[name]
    assert roastcoffea.track_section is roastcoffea.track_time is track_time
