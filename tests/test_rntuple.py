"""RNTuple files: the same synthetic NanoAOD as a TTree and as an RNTuple, run by coffea.

The demo's generator writes both layouts from the same random stream (uproot writes the
RNTuple, one cluster per block of events); coffea's ``Runner`` reads each on a real cluster
with the demo's processor. Checked against independent figures:

* the two runs give the same output (cutflow and histograms);
* on the RNTuple, each chunk's bytes are the pages uproot's own page list holds for the
  fields the chunk accessed, in the clusters uproot's ``arrays`` reads for its range; they
  are the bytes the source fetched after the open, and the decompressed pages' sizes are
  what the codecs produced;
* the records and the per-file figures say ``page``, the reads table and the diagnosis
  speak of pages;
* the phases are attributed: the pages' waits are ``read``, the codecs ``decompress``, the
  arrays ``interpret``, and they add up to each task's time.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import cloudpickle
import numpy as np
import pytest
import uproot
from coffea_run import collected_run
from distributed import Client

from roastcoffea import RoastPlugin
from roastcoffea.demo.analysis import DATASET, DemoProcessor
from roastcoffea.demo.nanoaod import TREE, generate
from roastcoffea.metrics.diagnosis import read_findings
from roastcoffea.report.tables import reads_table

cloudpickle.register_pickle_by_value(sys.modules[__name__])

EVENTS, CLUSTER, CHUNK = 20000, 5000, 5000


def run(client: Client, path: Path) -> dict[str, Any]:
    fileset = {DATASET: {"files": {str(path): TREE}}}
    done = collected_run(client, fileset, DemoProcessor(), CHUNK)
    metrics, output = done.mc.get_metrics(), done.output[DATASET]
    return {"metrics": metrics, "output": output, "durations": done.durations}


@pytest.fixture(scope="module")
def layouts(client: Client, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    client.register_plugin(RoastPlugin())
    root = tmp_path_factory.mktemp("rntuple")
    out = {}
    for layout in ("ttree", "rntuple"):
        (path,) = generate(
            root / layout,
            EVENTS,
            1,
            compression="lz4:1",
            basket_events=CLUSTER,
            processes=1,
            layout=layout,
        )
        out[layout] = {"path": path, **run(client, path)}
    return out


def test_the_generator_writes_an_rntuple_of_the_same_events(layouts: dict[str, Any]) -> None:
    ttree = uproot.open(layouts["ttree"]["path"])[TREE]
    ntuple = uproot.open(layouts["rntuple"]["path"])[TREE]
    assert type(ntuple).__name__ == "Model_ROOT_3a3a_RNTuple"
    assert ntuple.num_entries == ttree.num_entries == EVENTS
    assert len(ntuple.cluster_summaries) == EVENTS // CLUSTER
    for name in ("nJet", "Jet_pt", "Muon_charge", "HLT_IsoMu24"):
        assert ntuple[name].array().tolist() == ttree[name].array().tolist(), name


def test_both_layouts_give_the_same_output(layouts: dict[str, Any]) -> None:
    ttree, rntuple = layouts["ttree"]["output"], layouts["rntuple"]["output"]
    assert rntuple["cutflow"] == ttree["cutflow"]
    assert rntuple["cutflow"]["events"] == EVENTS and rntuple["cutflow"]["z_window"] > 0
    for name in ("mjj", "mll"):
        np.testing.assert_array_equal(
            rntuple[name].values(flow=True), ttree[name].values(flow=True)
        )


def uproot_pages(ntuple: Any, fields: list[str], start: int, stop: int) -> dict[int, tuple]:
    """``{offset: (stored, uncompressed)}`` of the pages uproot's page list holds for the
    columns of ``fields`` (and their subfields), in the clusters ``arrays`` reads for
    ``[start, stop)`` (its own cluster search, as in ``HasFields.arrays``)."""
    records = ntuple.field_records

    def top(number: int) -> str:
        while records[number].parent_field_id != number:
            number = records[number].parent_field_id
        return str(records[number].field_name)

    columns = [i for i, c in enumerate(ntuple.column_records) if top(c.field_id) in fields]
    starts = np.array([c.num_first_entry for c in ntuple.cluster_summaries])
    first = int(np.searchsorted(starts, start, side="right")) - 1
    last = int(np.searchsorted(starts, stop, side="right"))
    pages = {}
    for cluster in range(max(first, 0), last):
        for column in columns:
            bits = ntuple.column_records[column].nbits
            for page in ntuple.page_link_list[cluster][column].pages:
                pages[page.locator.offset] = (
                    page.locator.num_bytes,
                    math.ceil(page.num_elements * bits / 8),
                )
    return pages


def test_rntuple_chunk_bytes_are_the_pages_of_uproots_page_list(
    layouts: dict[str, Any],
) -> None:
    run_ = layouts["rntuple"]
    ntuple = uproot.open(run_["path"])[TREE]
    records = {r["task_key"]: r for r in run_["metrics"]["raw_phase_records"]}
    chunks = run_["metrics"]["raw_chunk_metrics"]
    assert len(chunks) == EVENTS // CHUNK
    for chunk in chunks:
        expected = uproot_pages(
            ntuple, chunk["accessed_branches"], chunk["entry_start"], chunk["entry_stop"]
        )
        assert chunk["storage_unit"] == "page"
        assert chunk["accessed_baskets"]["id"] == sorted(expected)
        assert chunk["accessed_bytes"] == sum(s for s, _ in expected.values())
        assert chunk["accessed_uncompressed_bytes"] == sum(u for _, u in expected.values())
        # One request per page: what the source fetched after the open.
        assert chunk["accessed_bytes"] == chunk["bytes_read_task"] - chunk["open_bytes"]
        # Pages stored compressed are what the codecs decompressed, to their full size.
        produced = sum(out for *_, out in records[chunk["task_key"]]["codecs"].values())
        assert produced == sum(u for s, u in expected.values() if s < u)
    (ttree_chunk, *_) = layouts["ttree"]["metrics"]["raw_chunk_metrics"]
    assert ttree_chunk["storage_unit"] == "basket"


def test_each_page_counts_once_per_file(layouts: dict[str, Any]) -> None:
    run_ = layouts["rntuple"]
    ntuple = uproot.open(run_["path"])[TREE]
    chunks = run_["metrics"]["raw_chunk_metrics"]
    distinct: dict[int, tuple] = {}
    for chunk in chunks:
        distinct |= uproot_pages(
            ntuple, chunk["accessed_branches"], chunk["entry_start"], chunk["entry_stop"]
        )
    (read,) = run_["metrics"]["file_read_metrics"].values()
    assert read["storage_unit"] == "page"
    assert read["baskets_read"] == len(distinct)
    assert read["bytes_read"] == sum(s for s, _ in distinct.values())
    assert read["bytes_read_uncompressed"] == sum(u for _, u in distinct.values())
    total = sum(
        page.locator.num_bytes
        for cluster in ntuple.page_link_list
        for column in cluster
        for page in column.pages
    )
    assert read["total_tree_bytes"] == total
    assert read["total_branches"] == len(ntuple.keys(recursive=False))


def test_the_phases_are_attributed_and_add_up(layouts: dict[str, Any]) -> None:
    metrics, durations = layouts["rntuple"]["metrics"], layouts["rntuple"]["durations"]
    wall = metrics["phase_wall_seconds"]
    assert wall["read"] > 0 and wall["decompress"] > 0 and wall["interpret"] > 0
    assert set(metrics["decompress_codecs"]) == {"LZ4"}
    chunks = metrics["raw_chunk_metrics"]
    assert metrics["phase_read_bytes"] == sum(c["accessed_bytes"] for c in chunks)
    for record in metrics["raw_phase_records"]:
        total = math.fsum(record["wall"].values())
        assert total == pytest.approx(record["elapsed"], rel=1e-9)
        assert total <= durations[record["task_key"]] + 1e-3


def test_the_reads_table_and_the_diagnosis_speak_of_pages(layouts: dict[str, Any]) -> None:
    metrics = layouts["rntuple"]["metrics"]
    table = reads_table(metrics)
    assert table is not None
    headers = [column.name for column in table.columns]
    assert "Pages" in headers and "Baskets" not in headers
    assert table.note is not None and "pages" in table.note and "basket" not in table.note
    (shape,) = metrics["read_shapes"].values()
    assert shape["storage_unit"] == "page"
    # The rule's message on this file's shape, were its reads amplified:
    findings = read_findings({"f.root": {**shape, "amplification": 3.0}})
    advice = next(f.message for f in findings if f.rule == "read-amplification")
    assert "pages used" in advice and "cluster boundaries" in advice
    assert "basket" not in advice
