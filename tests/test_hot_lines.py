"""The hot lines of the user's code, from Dask's own profiler, on a real cluster.

The processor spends most of its ``user`` time in one named helper, and times that
helper with ``time.thread_time`` inside it: the helper's line comes first among the
hot lines, with a share of the user-code samples within 10 points of its share of
the ``user`` phase's CPU. With Dask's profiler off, the hot lines are None and say why.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import awkward as ak
import cloudpickle
import dask
import pytest
from coffea import processor
from coffea.nanoevents import NanoAODSchema
from conftest import local_cluster
from distributed import Client

from roastcoffea import MetricsCollector, RoastPlugin
from roastcoffea.metrics.hot_lines import kind

cloudpickle.register_pickle_by_value(sys.modules[__name__])

TREE = "Events"
#: CPU seconds the helper burns per chunk: 25 samples of 10 ms per chunk, 4 chunks.
BURN = 0.25


def spin(seconds: float) -> float:
    """Burn ``seconds`` of this thread's CPU; return the thread CPU it took."""
    start = time.thread_time()
    end = start + seconds
    while time.thread_time() < end:
        pass
    return time.thread_time() - start


class Helped(processor.ProcessorABC):
    """Reads a little, then spends its CPU in :func:`spin`; returns the helper's CPU."""

    def process(self, events: Any) -> dict[str, Any]:
        total = float(ak.sum(events.Jet.pt))
        return {"spin_cpu": spin(BURN), "sum": total}

    def postprocess(self, accumulator: Any) -> Any:
        return accumulator


def run(client: Client, path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    warn = NanoAODSchema.warn_missing_crossrefs
    NanoAODSchema.warn_missing_crossrefs = False
    runner = processor.Runner(
        executor=processor.DaskExecutor(client=client, status=False),
        schema=NanoAODSchema,
        chunksize=10,
        savemetrics=True,
    )
    try:
        with MetricsCollector(client) as mc:
            output, report = runner(
                {"dy": {"files": {str(path): TREE}}}, processor_instance=Helped(), treename=TREE
            )
            mc.set_coffea_report(report)
    finally:
        NanoAODSchema.warn_missing_crossrefs = warn
    assert mc.collector_errors == []
    return mc.get_metrics(), output


@pytest.fixture(scope="module")
def helped(client: Client, cms_data: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    client.register_plugin(RoastPlugin())
    return run(client, cms_data / "nano_dy.root")


def test_the_helper_s_line_is_first_with_its_share_of_user_cpu(
    helped: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    m, output = helped
    first = m["hot_lines"][0]
    # Pickled by value (as a notebook's processor is), the helper has no file of its own.
    assert (first["function"], first["file"]) == ("spin", "<dynamic-code>")
    assert first["line"] == spin.__code__.co_firstlineno
    # The helper's share of the user phase's CPU, by its own clock, against its share of
    # the samples in the user's code.
    spin_share = 100.0 * output["spin_cpu"] / m["phase_cpu_seconds"]["user"]
    assert abs(first["share_percent"] - spin_share) <= 10.0, (first, spin_share)
    assert first["inclusive_samples"] == pytest.approx(first["samples"])  # spin calls no user code
    # process() is listed only when a sample landed in it outside spin: then it holds all.
    for process in (h for h in m["hot_lines"] if h["function"] == "process"):
        assert process["inclusive_percent"] == pytest.approx(100.0)
    assert set(m["hot_lines_per_worker"]) <= set(m["per_worker"])
    assert m["user_profile_samples"] <= m["profile_samples"]


def test_the_icicle_holds_the_samples_and_names_the_user_s_frames(
    helped: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    m, _ = helped
    tree = m["profile_tree"]
    assert tree["count"] == m["profile_samples"]

    def walk(node: dict[str, Any]) -> list[dict[str, Any]]:
        return [node, *(n for child in node["children"] for n in walk(child))]

    nodes = walk(tree)
    # A frame's samples whose innermost frame was a child are shared out among the
    # children as floats: their sum may exceed the frame's by rounding, never more.
    assert all(sum(c["count"] for c in n["children"]) <= n["count"] * (1 + 1e-12) for n in nodes)
    assert any(n["kind"] == "user" and n["name"].startswith("spin (") for n in nodes)


def test_with_dask_s_profiler_off_the_hot_lines_say_why(cms_data: Path) -> None:
    with (
        dask.config.set({"distributed.worker.profile.enabled": False}),
        local_cluster(n_workers=1) as cluster,
        Client(cluster) as client,
    ):
        m, _ = run(client, cms_data / "nano_dy.root")
    assert m["hot_lines"] is None
    assert "distributed.worker.profile.enabled" in m["unavailable"]["hot_lines"]
    assert m["profile_tree"] is None


def test_frames_are_told_apart_by_their_files() -> None:
    def node(filename: str) -> dict[str, Any]:
        return {"description": {"filename": filename}}

    assert kind(node(__file__)) == "user"
    assert kind(node("/usr/lib/python3.11/threading.py")) == "library"
    assert kind(node("/x/lib/python3.11/site-packages/numpy/core/a.py")) == "library"
    assert kind(node("/x/lib/python3.11/site-packages/uproot/source/http.py")) == "input"
    assert kind(node("/x/site-packages/coffea/nanoevents/factory.py")) == "input"
    assert kind(node("<frozen importlib._bootstrap>")) == "library"
