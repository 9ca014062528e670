"""Chunk records, phases and workers as tables; the chunk records' Parquet file, read back."""

from __future__ import annotations

import json
import math
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import awkward as ak
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from measured_run import Measured

from roastcoffea import DecodeError, load_measurement, save_measurement, to_arrow, to_pandas
from roastcoffea.formats.parquet import (
    MAX_STRUCT_FIELDS,
    RECORDS_KEY,
    read_parquet,
    records_from_arrow,
    records_to_arrow,
    write_parquet,
)
from roastcoffea.formats.tagged_json import to_tagged_json
from roastcoffea.measurement import load_metadata

#: What the records may take in Python: the packaged default.
LIMIT = 1 << 30

#: Records of every shape a field may take: mixed types, nesting, absence, None, NaN.
ODD_RECORDS: list[dict[str, Any]] = [
    {"n": 1, "x": 1.5, "mixed": 1, "nested": {"a": [1, 2]}, "when": None, "flag": True},
    {"x": math.nan, "n": None, "mixed": 2.5, "nested": {}, "flag": False, "key": ("f", 0, 10)},
    {
        "n": 3,
        "mixed": "three",
        "nested": {"b": {"c": None}},
        "when": datetime(2026, 1, 2, tzinfo=timezone.utc),
    },
]


def same(a: Any, b: Any) -> bool:
    """Equal, NaN equal to NaN, of the same types and key order all the way down."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def test_records_of_every_shape_come_back_exactly() -> None:
    table = records_to_arrow(ODD_RECORDS)
    assert table.schema.field("n").type == "int64" and table.schema.field("x").type == "double"
    assert table.schema.field("mixed").type == "string"  # mixed types: tagged JSON text
    nested = table.schema.field("nested").type
    assert nested == pa.struct({"a": pa.list_(pa.int64()), "b": pa.struct({"c": pa.string()})})
    assert same(records_from_arrow(table), ODD_RECORDS)
    assert same(read_parquet(write_parquet(ODD_RECORDS), LIMIT), ODD_RECORDS)


#: Chunk records as the worker writes them: an envelope, sections, a list, keys that vary.
CHUNKS: list[dict[str, Any]] = [
    {
        "kind": "chunk",
        "v": 1,
        "num_events": 10,
        "timing": {"jets": 0.25, "muons": 0.5},
        "branches": ["Jet_pt", "Muon_pt"],
        "counts": {f"key{i}": i for i in range(MAX_STRUCT_FIELDS + 1)},
    },
    {
        "kind": "chunk",
        "v": 1,
        "num_events": 20,
        "timing": {"muons": 1.0, "jets": 2.0, "extra": None},
        "branches": [],
        "counts": {},
    },
    {"kind": "chunk", "v": 1, "num_events": 30, "timing": None, "branches": ["Jet_pt"]},
]


def test_nested_fields_are_arrow_structs_and_lists_without_internal_columns(
    tmp_path: Path,
) -> None:
    path = tmp_path / "chunks.parquet"
    path.write_bytes(write_parquet(CHUNKS))
    table = pq.read_table(path)
    assert table.column_names == ["num_events", "timing", "branches", "counts"]
    schema = table.schema
    assert schema.field("timing").type == pa.struct(
        {"jets": pa.float64(), "muons": pa.float64(), "extra": pa.string()}
    )
    assert schema.field("branches").type == pa.list_(pa.string())
    assert schema.field("counts").type == pa.string()  # keys that are data: tagged JSON
    # awkward reads records and lists; pandas gives dicts; load_measurement the records.
    events = ak.from_parquet(path)
    assert ak.to_list(events.timing.jets) == [0.25, 2.0, None]
    assert ak.to_list(ak.num(events.branches)) == [2, 0, 1]
    frame = pd.read_parquet(path)
    assert frame["timing"][0] == {"jets": 0.25, "muons": 0.5, "extra": None}
    assert same(read_parquet(path.read_bytes(), LIMIT), CHUNKS)


def test_a_table_not_written_by_roastcoffea_is_refused() -> None:
    other = pd.DataFrame({"a": [1, 2]})
    with pytest.raises(ValueError, match="not a table of roastcoffea records"):
        records_from_arrow(pa.Table.from_pandas(other))


@pytest.mark.parametrize(
    "irregular",
    [[[7, {"absent": [["timing"]]}]], [[0, {"absent": [["nope", "x"]]}]], [[0, {"order": 3}]], 5],
)
def test_damaged_metadata_is_one_error_naming_it(irregular: Any) -> None:
    table = records_to_arrow(CHUNKS)
    described = json.loads(table.schema.metadata[RECORDS_KEY])
    described["irregular"] = irregular
    damaged = table.replace_schema_metadata({RECORDS_KEY: json.dumps(described).encode()})
    with pytest.raises(ValueError, match=r"roastcoffea\.records"):
        records_from_arrow(damaged)


def test_the_saved_chunk_records_are_a_parquet_file_read_back_exactly(
    measured: Measured, tmp_path: Path
) -> None:
    metrics, t0, t1 = load_measurement(measured.path)
    assert load_metadata(measured.path)["chunks_file"] == "chunks.parquet"
    records = measured.metrics["raw_chunk_metrics"]
    assert same(metrics["raw_chunk_metrics"], records)
    # A physicist reads the file with pyarrow or pandas directly, one row per chunk.
    table = pq.read_table(measured.path / "chunks.parquet")
    assert table.num_rows == len(records) == measured.metrics["num_chunks"]
    assert table.column("num_events").to_pylist() == [r["num_events"] for r in records]
    assert not {"kind", "v", "_absent", "_order"} & set(table.column_names)
    assert pa.types.is_struct(table.schema.field("timing").type)
    sections = ak.from_parquet(measured.path / "chunks.parquet").timing.select
    assert ak.to_list(sections) == [r["timing"].get("select") for r in records]
    # And the metrics file no longer carries them.
    assert '"raw_chunk_metrics": null' in (measured.path / "metrics.json").read_text()
    again = save_measurement(dict(metrics), t0, t1, tmp_path, "again")
    assert same(dict(load_measurement(again)[0]), dict(metrics))


def test_the_saved_phase_records_are_a_parquet_file_read_back_exactly(
    measured: Measured,
) -> None:
    metrics = load_measurement(measured.path)[0]
    assert load_metadata(measured.path)["phases_file"] == "phases.parquet"
    records = measured.metrics["raw_phase_records"]
    assert records and same(metrics["raw_phase_records"], records)
    table = pq.read_table(measured.path / "phases.parquet")
    assert table.num_rows == len(records)
    assert table.column("task_key").to_pylist() == [r["task_key"] for r in records]
    assert pa.types.is_struct(table.schema.field("wall").type)
    assert '"raw_phase_records": null' in (measured.path / "metrics.json").read_text()


def test_a_measurement_with_its_phase_records_in_json_still_loads(
    measured: Measured, tmp_path: Path
) -> None:
    """As saved before phases.parquet: the records in metrics.json, no phases_file."""
    older = tmp_path / "older"
    shutil.copytree(measured.path, older)
    (older / "phases.parquet").unlink()
    metadata = json.loads((older / "metadata.json").read_text())
    del metadata["phases_file"]
    (older / "metadata.json").write_text(json.dumps(metadata))
    saved = json.loads((older / "metrics.json").read_text())
    records = measured.metrics["raw_phase_records"]
    saved["metrics"]["raw_phase_records"] = to_tagged_json(records)
    (older / "metrics.json").write_text(json.dumps(saved))
    assert same(load_measurement(older)[0]["raw_phase_records"], records)


def test_a_damaged_parquet_file_is_one_error_naming_it(measured: Measured, tmp_path: Path) -> None:
    metrics, t0, t1 = load_measurement(measured.path)
    path = save_measurement(dict(metrics), t0, t1, tmp_path, "damaged")
    (path / "chunks.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(DecodeError, match=r"chunks\.parquet: not a Parquet file: no PAR1"):
        load_measurement(path)


def test_the_three_tables_have_a_row_per_chunk_task_and_worker(measured: Measured) -> None:
    metrics = measured.metrics
    chunks = to_pandas(metrics)
    assert len(chunks) == metrics["num_chunks"]
    assert chunks["num_events"].sum() == metrics["total_events"]
    assert chunks.groupby("dataset")["num_events"].sum().to_dict() == {
        d: row["total_events"] for d, row in metrics["per_dataset"].items()
    }
    assert "timing.select" in chunks.columns  # a section, spread into its own column
    # A dict that is None in one row is spread all the same, with no column of its own.
    some = [dict(r) for r in metrics["raw_chunk_metrics"]]
    some[0]["file_metadata"] = None
    spread = to_pandas({"raw_chunk_metrics": some})
    assert "file_metadata" not in spread.columns
    none = [r.get("file_metadata") is None for r in some]
    assert spread["file_metadata.filename"].isna().tolist() == none
    phases = to_pandas(metrics, "phases")
    assert len(phases) == metrics["phase_tasks"]
    assert phases["wall.user"].sum() == pytest.approx(metrics["phase_wall_seconds"]["user"])
    workers = to_pandas(metrics, "workers")
    assert sorted(workers["worker"]) == sorted(metrics["per_worker"])
    assert workers["tasks"].sum() == sum(r["tasks"] for r in metrics["per_worker"].values())
    assert to_arrow(metrics, "workers").num_rows == len(workers)
    assert measured.collector.to_pandas("phases").shape == phases.shape
    with pytest.raises(ValueError, match="no table 'files'"):
        to_pandas(metrics, "files")  # type: ignore[arg-type]
