"""MetricsCollector acceptance tests: real coffea Runner + DaskExecutor on real ROOT files.

The fileset has two datasets over the three CMS files; ``chunksize=100``
makes four chunks (40 + 40 + 2 x 100 events), so every run stays short on a
loaded machine. The three collector runs on the session cluster are made
once, in order (``runs``): A and B run the same workload with
``compression=1`` one after the other, C runs it with ``compression=None``.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import awkward as ak
import cloudpickle
import pytest
from coffea import processor
from coffea.nanoevents import NanoAODSchema
from distributed import Client

from roastcoffea import MetricsCollector, load_measurement, track_metrics, track_time
from roastcoffea.measurement import load_native

# Workers import roastcoffea but not this test module: ship the processors by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

CHUNKSIZE = 100
TREE = "Events"


class MuonCounter(processor.ProcessorABC):
    """Counts events and muons per dataset."""

    @track_metrics
    def process(self, events: Any) -> dict[str, Any]:
        with track_time(self, "muons"):
            muons = int(ak.sum(ak.num(events.Muon.pt)))
        dataset = events.metadata["dataset"]
        return {"events": {dataset: len(events)}, "muons": {dataset: muons}}

    def postprocess(self, accumulator: Any) -> Any:
        return accumulator


class KillOnce(MuonCounter):
    """Kills its worker process on the first attempt of the chunk starting at ``kill_at``.

    The marker file makes it happen once: the retry of the chunk on another
    worker (or the restarted one) goes through, so the run completes.
    """

    def __init__(self, marker: str, kill_file: str, kill_at: int) -> None:
        self.marker = marker
        self.kill_file = kill_file
        self.kill_at = kill_at

    @track_metrics
    def process(self, events: Any) -> dict[str, Any]:
        meta = events.metadata
        if meta["filename"].endswith(self.kill_file) and meta["entrystart"] == self.kill_at:
            try:
                fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                pass
            else:
                os.close(fd)
                os._exit(1)
        dataset = meta["dataset"]
        return {"events": {dataset: len(events)}}


def fileset(data: Path) -> dict[str, Any]:
    return {
        "dy": {"files": {str(data / "nano_dy.root"): TREE, str(data / "nano_dimuon.root"): TREE}},
        "ttbar": {"files": {str(data / "nanoAOD_2015_CMS_Open_Data_ttbar.root"): TREE}},
    }


def runner(client: Client, compression: int | None) -> processor.Runner:
    return processor.Runner(
        executor=processor.DaskExecutor(client=client, compression=compression, status=False),
        schema=NanoAODSchema,
        chunksize=CHUNKSIZE,
        savemetrics=True,
    )


def collect(
    client: Client, data: Path, compression: int | None, proc: Any = None
) -> tuple[MetricsCollector, dict[str, Any], dict[str, Any]]:
    run = runner(client, compression)
    with MetricsCollector(client) as mc:
        output, report = run(fileset(data), processor_instance=proc or MuonCounter(), treename=TREE)
        mc.set_coffea_report(report)
    return mc, output, report


@pytest.fixture(scope="module")
def runs(client: Client, cms_data: Path) -> Iterator[dict[str, Any]]:
    # The CMS files predate some cross-references; restore the class-wide
    # setting afterwards so other modules see coffea's default.
    warn = NanoAODSchema.warn_missing_crossrefs
    NanoAODSchema.warn_missing_crossrefs = False
    try:
        items = list(runner(client, 1).preprocess(fileset(cms_data), treename=TREE))
        out: dict[str, Any] = {"items": items}
        for name, compression in (("A", 1), ("B", 1), ("C", None)):
            out[name] = collect(client, cms_data, compression)
    finally:
        NanoAODSchema.warn_missing_crossrefs = warn
    yield out


def chunk_keys(chunks: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((c["dataset"], c["file"], c["entry_start"], c["entry_stop"]) for c in chunks)


# ---- 1. chunks and rates --------------------------------------------------------------


def test_chunks_match_the_work_items_and_the_report(runs: dict[str, Any]) -> None:
    mc, output, report = runs["A"]
    assert mc.collector_errors == []
    chunks = mc.chunk_metrics
    expected = sorted((i.dataset, i.filename, i.entrystart, i.entrystop) for i in runs["items"])
    assert len(expected) == 4
    assert chunk_keys(chunks) == expected
    assert sum(c["num_events"] for c in chunks) == report["entries"] == 280
    assert all(c["error"] is None for c in chunks)
    assert "__roastcoffea_metrics__" not in output
    assert output["events"] == {"dy": 80, "ttbar": 200}

    m = mc.get_metrics()
    assert m["num_chunks"] == 4 and m["num_failed_chunks"] == 0
    assert m["per_dataset"]["dy"]["num_chunks"] == 2
    assert m["per_dataset"]["ttbar"]["total_events"] == 200
    assert m["sections"]["timing"]["muons"]["count"] == 4


def test_rates_follow_their_formulas(runs: dict[str, Any]) -> None:
    mc, _, report = runs["A"]
    m = mc.get_metrics()
    wall = m["wall_time"]
    assert wall == mc.wall_time
    assert 0 < wall <= mc.t_end - mc.t_start + 0.05
    assert m["total_events"] == report["entries"]
    assert m["bytes_read_compressed"] == report["bytesread"]
    assert m["event_rate_wall_khz"] == pytest.approx(report["entries"] / wall / 1e3, rel=1e-12)
    assert m["overall_rate_gbps"] == pytest.approx(report["bytesread"] * 8 / 1e9 / wall, rel=1e-12)
    assert m["overall_rate_mb_s"] == pytest.approx(report["bytesread"] / 1e6 / wall, rel=1e-12)
    assert m["event_rate_agg_khz"] == pytest.approx(
        report["entries"] / m["processor_task_time_seconds"] / 1e3, rel=1e-12
    )
    assert m["event_rate_core_hz"] == pytest.approx(
        report["entries"] / (wall * m["total_cores"]), rel=1e-12
    )
    # roastcoffea 0.1.2 names carry the same values.
    assert m["elapsed_time_seconds"] == wall
    assert m["data_rate_gbps"] == m["overall_rate_gbps"]
    assert m["event_rate_elapsed_khz"] == m["event_rate_wall_khz"]
    assert m["avg_workers"] == pytest.approx(2.0)
    assert m["peak_workers"] == 2


# ---- 2. processor vs overhead ---------------------------------------------------------


@pytest.mark.parametrize(("run", "prefix"), [("A", "MuonCounter"), ("C", "automatic_retries")])
def test_processor_plus_overhead_is_the_span_total(
    runs: dict[str, Any], run: str, prefix: str
) -> None:
    mc, _, _ = runs[run]
    m = mc.get_metrics()
    assert m["processor_prefixes"] == [prefix]
    assert m["processor_prefix_source"] == "workers"
    span_cpu = math.fsum(
        v for k, v in mc.span_metrics.items() if k[2:] == ("thread-cpu", "seconds")
    )
    assert span_cpu > 0
    split = m["processor_cpu_time_seconds"] + m["overhead_cpu_time_seconds"]
    assert split == pytest.approx(span_cpu, rel=1e-12)
    assert m["total_cpu_time"] == pytest.approx(span_cpu, rel=1e-12)
    assert m["processor_cpu_time_seconds"] > m["overhead_cpu_time_seconds"]
    assert m["raw_span_metrics"] == pytest.approx(mc.span_metrics, rel=1e-12)
    assert m["per_prefix"][prefix]["processor"] is True
    assert m["per_prefix"][prefix]["tasks"] == 4


# ---- 3. save and load -----------------------------------------------------------------


def assert_same(a: Any, b: Any, where: str = "metrics") -> None:
    """Equal, with NaN equal to NaN and types kept (tuples stay tuples)."""
    assert type(a) is type(b) or {type(a), type(b)} <= {int, float}, where
    if isinstance(a, dict):
        assert list(a) == list(b), where
        for key in a:
            assert_same(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b), where
    else:
        assert a == b, where


def test_save_and_load_restore_the_metrics(runs: dict[str, Any], tmp_path: Path) -> None:
    mc, _, _ = runs["A"]
    metrics = mc.get_metrics()
    path = mc.save_measurement(tmp_path, "run-a")
    loaded, t0, t1 = load_measurement(path)
    assert (t0, t1) == (mc.t_start, mc.t_end)
    assert_same(metrics, loaded)
    assert isinstance(next(iter(loaded["raw_span_metrics"])), tuple)
    assert loaded["tracking_data"]["worker_counts"]
    assert all(k.tzinfo is not None for k in loaded["tracking_data"]["worker_counts"])
    assert all(isinstance(k, tuple) for k in loaded["chunk_info"])
    assert chunk_keys(loaded["raw_chunk_metrics"]) == chunk_keys(mc.chunk_metrics)
    assert {p.name for p in path.iterdir()} == {
        "metrics.json",
        "metadata.json",
        "start_end_time.txt",
        "native_state.json",
        "chunks.parquet",
        "phases.parquet",
    }
    native = load_native(path)
    for table in ("workers", "tasks", "digests", "spans", "series", "counters"):
        assert_same(native[table], mc.snapshot[table], table)  # NaN: a column not measured
    # The records are stored once, as the chunk metrics in metrics.json (compared above).
    assert native["records"] == [] and mc.snapshot["records"]
    # A name already taken never loses the run: it is saved under the next free name.
    with pytest.warns(UserWarning, match="run-a-2"):
        again = mc.save_measurement(tmp_path, "run-a")
    assert again == tmp_path / "run-a-2"
    assert load_measurement(again)[0]["total_events"] == load_measurement(path)[0]["total_events"]
    assert mc.save_measurement(tmp_path, "run-a", overwrite=True) == path


# ---- 4. sequential collectors ---------------------------------------------------------


def test_second_collector_excludes_the_first(runs: dict[str, Any]) -> None:
    a, _, _ = runs["A"]
    b, _, report_b = runs["B"]
    assert a.span_id != b.span_id and not (a.run.span_ids & b.run.span_ids)
    # Same workload, same task keys: B counts its own four chunks, not eight.
    assert chunk_keys(b.chunk_metrics) == chunk_keys(a.chunk_metrics)
    assert sum(c["num_events"] for c in b.chunk_metrics) == report_b["entries"]
    assert {c["span"] for c in b.chunk_metrics} <= b.run.span_ids
    mb = b.get_metrics()
    ma = a.get_metrics()
    for prefix, row in mb["per_prefix"].items():
        assert row["tasks"] == ma["per_prefix"][prefix]["tasks"], prefix
    assert mb["per_prefix"]["MuonCounter"]["tasks"] == 4
    assert b.t_start >= a.t_end
    assert all(t >= b.run.window[0] for s in b.snapshot["series"].values() for t in s["t_first"])


# ---- 5. a worker dies mid-run ---------------------------------------------------------


def test_lost_worker_is_reported(make_cluster: Any, cms_data: Path, tmp_path: Path) -> None:
    _, client = make_cluster()
    proc = KillOnce(str(tmp_path / "killed"), "nanoAOD_2015_CMS_Open_Data_ttbar.root", 100)
    mc, output, report = collect(client, cms_data, 1, proc)
    assert (tmp_path / "killed").exists()
    assert output["events"] == {"dy": 80, "ttbar": 200}
    m = mc.get_metrics()
    assert len(m["lost_workers"]) == 1
    lost = m["lost_workers"][0]
    assert mc.t_start <= lost["removed"] <= mc.t_end + 1
    assert m["restarted_workers"] == [lost]  # its nanny started a new one, under its name
    assert lost["restarted_as"] in client.scheduler_info()["workers"]
    assert lost["address"] in m["workers_removed"]
    assert m["total_events"] == report["entries"]
    assert m["processor_prefixes"] == ["KillOnce"]
    mc.print_summary()
