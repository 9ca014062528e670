"""The run's tail and the shape of its reads, on a real cluster reading over HTTP.

Three synthetic NanoAOD files are served by a local HTTP server: two of three chunks
at full rate, and one of a single chunk over a link so slow that, whatever the schedule
on two threads, one thread idles while it runs. Checked against independent figures:

* the tail's slow chunks are that file's, their cause is ``read``, and the idle
  thread-seconds of each stage equal those computed from Dask's own task stream;
* each chunk's read requests, byte ranges and bytes equal uproot's own counters
  read by the processor at the end of ``process()``; the bytes fetched before
  ``process()`` equal what opening the file and its tree alone fetches.
"""

from __future__ import annotations

import itertools
import sys
from typing import Any

import awkward as ak
import cloudpickle
import pytest
import uproot
from coffea import processor
from coffea.nanoevents import NanoAODSchema
from distributed import Client, get_task_stream
from distributed.utils import key_split
from throttled_http import serve

from roastcoffea import MetricsCollector, RoastPlugin, track_metrics
from roastcoffea.demo.nanoaod import generate
from roastcoffea.metrics.diagnosis import TAIL_IDLE_PERCENT

cloudpickle.register_pickle_by_value(sys.modules[__name__])

TREE = "Events"
FAST = 4e6
# The slow chunk takes S (about 6 s: its bytes at this rate, a sleep that load does not
# shorten); the six fast ones F together, their CPU stretched by load. Whatever the
# order, one thread idles for at least S - F of a processing of at most S + F, so the
# tail's idle share is at least (S - F) / 2(S + F): 25 % while F <= S / 3 (2 s; the fast
# chunks take tenths of a second each on a quiet machine), above TAIL_IDLE_PERCENT.
SLOW = FAST / 80
HTTP = {"handler": uproot.source.http.HTTPSource}


class CountingReader(processor.ProcessorABC):
    """Reads jets and muons; returns uproot's own counters of its source after process()."""

    @track_metrics
    def process(self, events: Any) -> dict[str, Any]:
        jets, muons = events.Jet, events.Muon
        total = sum(float(ak.sum(c)) for c in (jets.pt, jets.eta, muons.pt))
        source = events.attrs["@events_factory"].file_handle.file.source
        meta = events.metadata
        counters = (source.num_requests, source.num_requested_chunks, source.num_requested_bytes)
        return {"sum": total, "counters": {(meta["filename"], meta["entrystart"]): counters}}

    def postprocess(self, accumulator: Any) -> Any:
        return accumulator


@pytest.fixture(scope="module")
def slow_file_run(client: Client, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    client.register_plugin(RoastPlugin())
    directory = tmp_path_factory.mktemp("tail")
    layout = {"compression": "lz4:1", "basket_events": 2500, "processes": 1}
    fast = generate(directory, 30000, 2, **layout)
    slow = generate(directory / "slow", 5000, 1, seed=11, **layout)[0]
    names = {"fast_0": fast[0], "fast_1": fast[1], "slow": slow}
    relative = {name: path.relative_to(directory).as_posix() for name, path in names.items()}
    warn = NanoAODSchema.warn_missing_crossrefs
    NanoAODSchema.warn_missing_crossrefs = False
    runner = processor.Runner(
        executor=processor.DaskExecutor(client=client, status=False),
        schema=NanoAODSchema,
        chunksize=5000,
        savemetrics=True,
    )
    try:
        with serve(directory, FAST, {relative["slow"]: SLOW}) as (url, link):
            fileset = {name: {"files": {url + path: TREE}} for name, path in relative.items()}
            with get_task_stream(client) as stream, MetricsCollector(client) as mc:
                output, report = runner(
                    fileset, processor_instance=CountingReader(), treename=TREE, uproot_options=HTTP
                )
                mc.set_coffea_report(report)
            opened = {}
            for path in relative.values():
                with uproot.open(url + path, **HTTP) as file:
                    file[TREE]
                    opened[url + path] = file.file.source.num_requested_bytes
    finally:
        NanoAODSchema.warn_missing_crossrefs = warn
    assert mc.collector_errors == []
    return {
        "metrics": mc.get_metrics(),
        "stream": stream.data,
        "output": output,
        "slow": url + relative["slow"],
        "opened": opened,
        "slow_rate": link.own[relative["slow"]].rate,
        "threads": sum(client.nthreads().values()),
    }


def idle_from_task_stream(
    stream: list[dict[str, Any]], prefixes: list[str], threads: int, t0: float, t1: float
) -> dict[str, float]:
    """The idle thread-seconds of each stage, from Dask's task stream alone."""
    spans = [
        (s["start"], s["stop"])
        for task in stream
        if key_split(task["key"]) in prefixes
        for s in task["startstops"]
        if s["action"] == "compute"
    ]
    first, last = min(a for a, _ in spans), max(b for _, b in spans)
    instants = sorted({t for span in spans for t in span})
    full_until = first
    for a, b in itertools.pairwise(instants):
        if sum(1 for s, e in spans if s <= a and e >= b) >= threads:
            full_until = b
    edges = {
        "startup": (t0, first),
        "steady": (first, full_until),
        "tail": (full_until, last),
        "finish": (last, t1),
    }

    def busy(a: float, b: float) -> float:
        return sum(max(0.0, min(e, b) - max(s, a)) for s, e in spans)

    return {stage: threads * (b - a) - busy(a, b) for stage, (a, b) in edges.items()}


def test_the_tail_is_the_slow_files_and_its_cause_is_read(slow_file_run: dict[str, Any]) -> None:
    m, slow = slow_file_run["metrics"], slow_file_run["slow"]
    assert slow_file_run["slow_rate"] <= 1.01 * SLOW
    tail = m["wall_split"]["tail"]
    assert tail["seconds"] > 0
    slow_in_tail = [c for c in m["tail_chunks"] if c["vs_median"] >= 2]
    assert slow_in_tail, m["tail_chunks"]
    assert {c["file"] for c in slow_in_tail} == {slow}
    assert {c["cause"] for c in slow_in_tail} == {"read"}
    assert m["tail_cause"]["kind"] == "file" and m["tail_cause"]["name"] == slow
    assert m["tail_cause"]["phase"] == "read"

    # The rule fires exactly when the tail left TAIL_IDLE_PERCENT of the thread-seconds idle.
    capacity = m["wall_split"]["steady"]["thread_seconds"] + tail["thread_seconds"]
    share = 100.0 * tail["idle_thread_seconds"] / capacity
    findings = [f for f in m["diagnosis"] if f["rule"] == "tail"]
    assert bool(findings) == (share >= TAIL_IDLE_PERCENT), share
    seconds = sorted(round(c["task_duration"], 2) for c in m["raw_chunk_metrics"])
    assert findings, f"the tail left {share:.1f}% of the thread-seconds idle; chunks {seconds}"
    assert slow in findings[0]["message"] and "storage" in findings[0]["message"]


def test_idle_thread_seconds_equal_those_of_dasks_task_stream(
    slow_file_run: dict[str, Any],
) -> None:
    m = slow_file_run["metrics"]
    split = m["wall_split"]
    expected = idle_from_task_stream(
        slow_file_run["stream"],
        m["processor_prefixes"],
        slow_file_run["threads"],
        split["startup"]["start"],
        split["finish"]["end"],
    )
    for stage, idle in expected.items():
        assert split[stage]["idle_thread_seconds"] == pytest.approx(idle, abs=1e-6), stage
    assert m["idle_thread_seconds"] == pytest.approx(sum(expected.values()), abs=1e-6)
    assert m["longest_chunk_seconds"] <= m["processing_seconds"]
    assert m["packing_bound_seconds"] <= m["processing_seconds"]


def test_request_counts_equal_uproots_own_counters(slow_file_run: dict[str, Any]) -> None:
    m, counters = slow_file_run["metrics"], slow_file_run["output"]["counters"]
    chunks = m["raw_chunk_metrics"]
    assert len(chunks) == len(counters) == 7
    for chunk in chunks:
        requests, ranges, fetched = counters[chunk["file"], chunk["entry_start"]]
        assert chunk["read_requests_task"] == requests
        assert chunk["read_ranges_task"] == ranges
        assert chunk["bytes_read_task"] == fetched
    for name, shape in m["read_shapes"].items():
        own = [counters[key] for key in counters if key[0] == name]
        assert shape["requests"] == sum(c[0] for c in own)
        assert shape["fetched_bytes"] == sum(c[2] for c in own)
        assert shape["remote"] is True


def test_metadata_bytes_equal_what_opening_the_file_alone_fetches(
    slow_file_run: dict[str, Any],
) -> None:
    m, opened = slow_file_run["metrics"], slow_file_run["opened"]
    for chunk in m["raw_chunk_metrics"]:
        assert chunk["open_bytes"] == opened[chunk["file"]]
    for name, shape in m["read_shapes"].items():
        assert shape["open_bytes"] == shape["chunks"] * opened[name]
    chunks = {name: shape["chunks"] for name, shape in m["read_shapes"].items()}
    assert sorted(chunks.values()) == [1, 3, 3]
    assert m["metadata_bytes"] == sum(chunks[name] * b for name, b in opened.items())
