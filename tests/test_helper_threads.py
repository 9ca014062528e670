"""Decompression and interpretation on uproot's executor pools: the work is the chunk's.

A task of its own (``track_phases``) reads one chunk of LZMA-compressed generator output
with ``NanoEventsFactory.from_root``, a pool of two threads as its
``decompression_executor`` and ``interpretation_executor``, and runs the demo's processor
(``@track_metrics``) on it; the same chunk again with uproot's in-thread executors. On a
real cluster, checked against independent figures:

* the chunk's byte fields, its read bytes and the codecs' bytes are those of the run
  without pools (the baskets the helpers parsed are the chunk's);
* the task's phases add up to its time by Dask's clock, its waits for the helpers are
  ``decompress`` and ``interpret``;
* the helpers' CPU is the CPU the pool's threads spent, read from their own CPU clocks
  (less only what the executor's loop costs around each call), and one call per basket
  was decompressed and one interpreted;
* the collector's ``helper_*`` metrics are the records' sums, filed under the task's
  worker and prefix.
"""

from __future__ import annotations

import math
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import cloudpickle
import pytest
import uproot
from coffea.nanoevents import NanoAODSchema, NanoEventsFactory
from distributed import Client

from roastcoffea import MetricsCollector, RoastPlugin, track_phases
from roastcoffea.demo.analysis import DATASET, DemoProcessor
from roastcoffea.demo.nanoaod import TREE, generate
from roastcoffea.report.tables import phases_table
from roastcoffea.units import format_time

cloudpickle.register_pickle_by_value(sys.modules[__name__])

EVENTS, BASKET = 20000, 2500
FIELDS = ("accessed_bytes", "accessed_uncompressed_bytes", "accessed_baskets", "bytes_read")


@track_phases
def read_chunk(path: str, threads: int) -> dict[str, Any]:
    """The demo's processor on ``path`` (one chunk), with a pool of ``threads`` or none;
    returns the output and the CPU seconds the pool's threads spent."""
    NanoAODSchema.warn_missing_crossrefs = False
    pool = ThreadPoolExecutor(threads) if threads else None
    options = {"decompression_executor": pool, "interpretation_executor": pool}
    try:
        file = uproot.open(path)
        metadata = {"dataset": DATASET, "filename": path, "treename": TREE}
        metadata |= {"fileuuid": str(file.file.uuid), "entrystart": 0, "entrystop": EVENTS}
        events = NanoEventsFactory.from_root(
            file,
            treepath=TREE,
            mode="virtual",
            entry_start=0,
            entry_stop=EVENTS,
            schemaclass=NanoAODSchema,
            metadata=metadata,
            access_log=[],  # what @track_metrics reads the chunk's branches from
            **(options if pool else {}),
        ).events()
        output = DemoProcessor().process(events)
        pool_cpu = None
        if pool is not None:
            threads_of = pool._threads  # the pool's threads, alive until shutdown
            pool_cpu = math.fsum(
                time.clock_gettime(time.pthread_getcpuclockid(t.ident)) for t in threads_of
            )
        return {"cutflow": dict(output[DATASET]["cutflow"]), "pool_cpu": pool_cpu}
    finally:
        if pool is not None:
            pool.shutdown()


@pytest.fixture(scope="module")
def runs(client: Client, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    client.register_plugin(RoastPlugin())
    (path,) = generate(
        tmp_path_factory.mktemp("lzma"), EVENTS, 1, compression="lzma:9", basket_events=BASKET
    )
    worker = sorted(client.scheduler_info()["workers"])[0]
    out: dict[str, Any] = {"path": str(path), "worker": worker}
    for name, threads in (("inline", 0), ("pool", 2)):
        with MetricsCollector(client) as mc:
            result = client.submit(
                read_chunk, str(path), threads, workers=[worker], pure=False
            ).result()
        assert mc.collector_errors == []
        (chunk,) = mc.chunk_metrics
        mc.set_coffea_report({"entries": EVENTS, "chunks": 1})  # no Runner: what ran
        metrics = mc.get_metrics()
        (phases,) = metrics["raw_phase_records"]
        out[name] = {"result": result, "chunk": chunk, "phases": phases, "metrics": metrics}
    return out


def test_both_runs_give_the_same_output(runs: dict[str, Any]) -> None:
    assert runs["pool"]["result"]["cutflow"] == runs["inline"]["result"]["cutflow"]
    assert runs["inline"]["result"]["cutflow"]["events"] == EVENTS


def test_the_chunk_s_bytes_are_those_of_the_run_without_pools(runs: dict[str, Any]) -> None:
    inline, pool = runs["inline"], runs["pool"]
    for field in FIELDS:
        assert pool["chunk"][field] == inline["chunk"][field], field
    assert pool["chunk"]["accessed_bytes"] > 0
    assert pool["phases"]["read_bytes"] == inline["phases"]["read_bytes"]
    codec = {name: c[2:] for name, c in pool["phases"]["codecs"].items()}
    assert codec == {name: c[2:] for name, c in inline["phases"]["codecs"].items()}
    assert set(codec) == {"LZMA"}


def test_the_helpers_ran_one_decompression_and_one_interpretation_per_basket(
    runs: dict[str, Any],
) -> None:
    baskets = len(runs["pool"]["chunk"]["accessed_baskets"]["id"])
    assert baskets > 0
    helpers = runs["pool"]["phases"]["helpers"]
    assert helpers["runs"] == 2 * baskets
    assert runs["inline"]["phases"]["helpers"] is None
    assert runs["inline"]["metrics"]["helper_runs"] is None


def test_the_task_s_phases_add_up_and_its_waits_are_the_helpers_stages(
    runs: dict[str, Any],
) -> None:
    for name in ("inline", "pool"):
        record, chunk = runs[name]["phases"], runs[name]["chunk"]
        total = math.fsum(s for s in record["wall"].values() if s is not None)  # no output
        assert total == pytest.approx(record["elapsed"], rel=1e-9)
        assert total <= chunk["task_duration"] + 1e-3
    pool = runs["pool"]["phases"]
    assert pool["wall"]["user"] > 0  # the processor, from events() on
    # LZMA on the helpers: the task's thread waits for baskets, decompressing none itself
    assert pool["wall"]["decompress"] > 0
    assert pool["cpu"]["decompress"] < pool["helpers"]["cpu"]["decompress"]
    assert pool["helpers"]["cpu"]["decompress"] > 0
    assert pool["helpers"]["cpu"]["interpret"] > 0


def test_the_helpers_cpu_is_the_pool_threads_cpu(runs: dict[str, Any]) -> None:
    helpers = runs["pool"]["phases"]["helpers"]
    measured = math.fsum(helpers["cpu"].values())
    pool_cpu = runs["pool"]["result"]["pool_cpu"]
    # The pool's threads ran nothing but the task's calls: their CPU is the helpers', plus
    # the executor's own loop and the thread's start around them.
    assert 0.8 * pool_cpu <= measured <= pool_cpu


def test_the_metrics_are_the_records_sums_on_the_task_s_worker(runs: dict[str, Any]) -> None:
    metrics, record = runs["pool"]["metrics"], runs["pool"]["phases"]
    assert metrics["helper_runs"] == record["helpers"]["runs"]
    for key, part in (("helper_wall_seconds", "wall"), ("helper_cpu_seconds", "cpu")):
        assert metrics[key] == pytest.approx(record["helpers"][part], rel=1e-9), key
    assert record["worker"] == runs["worker"]
    assert record["prefix"] == "read_chunk"
    # the work item, from the events' metadata: no coffea WorkItem in a task of one's own
    assert (record["dataset"], record["file"]) == (DATASET, runs["path"])
    assert (record["entry_start"], record["entry_stop"]) == (0, EVENTS)
    assert metrics["interpret_rate_hz"] > 0


def guide_example() -> str:
    """The python block of docs/guide.md's "Decompressing on a thread pool"."""
    guide = (Path(__file__).parents[1] / "docs" / "guide.md").read_text(encoding="utf-8")
    section = guide.split("### Decompressing on a thread pool", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_guide_s_example_measures_the_pool(client: Client, runs: dict[str, Any]) -> None:
    path, half = runs["path"], EVENTS // 2
    namespace = {
        "client": client,
        "MyProcessor": DemoProcessor,
        "chunks": [(path, 0, half), (path, half, EVENTS)],
        "n_events": EVENTS,
    }
    exec(compile(guide_example(), "docs/guide.md", "exec"), namespace)
    mc, outputs = namespace["mc"], namespace["outputs"]
    assert mc.collector_errors == []
    events = sum(out["dy"]["cutflow"]["events"] for out in outputs)
    assert events == EVENTS
    metrics = mc.get_metrics()
    chunks, records = metrics["raw_chunk_metrics"], metrics["raw_phase_records"]
    assert len(chunks) == len(records) == 2
    assert sum(c["accessed_bytes"] for c in chunks) > 0
    assert metrics["helper_runs"] == sum(r["helpers"]["runs"] for r in records) > 0
    assert metrics["helper_cpu_seconds"]["decompress"] > 0


def test_the_phases_table_shows_the_helpers_cpu_only_with_pools(runs: dict[str, Any]) -> None:
    pool = phases_table(runs["pool"]["metrics"])
    inline = phases_table(runs["inline"]["metrics"])
    assert pool is not None and inline is not None
    assert [c.name for c in pool.columns][-1] == "Helper Threads' CPU"
    assert "Helper Threads' CPU" not in [c.name for c in inline.columns]
    rows = {row[0].text: row for row in pool.rows}
    helpers = runs["pool"]["metrics"]["helper_cpu_seconds"]
    assert rows["decompress"][-1].text == format_time(helpers["decompress"])
    assert rows["user"][-1].text == ""
    assert f"{runs['pool']['metrics']['helper_runs']} call(s)" in pool.note


def test_coffea_s_runner_does_not_pass_a_pool_on(runs: dict[str, Any]) -> None:
    # docs/metrics.md says so: Runner's uproot_options go to uproot.open, whose executors
    # the NanoEvents mapping overrides with uproot's in-thread ones. Checked in this
    # process (coffea's IterativeExecutor: nothing to pickle), with a pool that counts.
    from coffea import processor

    class CountingPool(ThreadPoolExecutor):
        submitted = 0

        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            CountingPool.submitted += 1
            return super().submit(fn, *args, **kwargs)

    warn = NanoAODSchema.warn_missing_crossrefs
    NanoAODSchema.warn_missing_crossrefs = False
    with CountingPool(2) as pool:
        runner = processor.Runner(
            executor=processor.IterativeExecutor(status=False),
            schema=NanoAODSchema,
            chunksize=EVENTS,
        )
        try:
            output = runner(
                {DATASET: {"files": {runs["path"]: TREE}}},
                processor_instance=DemoProcessor(),
                treename=TREE,
                uproot_options={"decompression_executor": pool, "interpretation_executor": pool},
            )
        finally:
            NanoAODSchema.warn_missing_crossrefs = warn
    assert output[DATASET]["cutflow"]["events"] == EVENTS
    assert CountingPool.submitted == 0
