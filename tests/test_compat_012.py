"""Code written for roastcoffea 0.1.2 imports and runs against ours (docs/compat.md)."""

from __future__ import annotations

import datetime as dt
import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from distributed import Client
from measured_run import Measured
from nbclient import NotebookClient
from test_instrument import FakeEvents, in_span

from roastcoffea import MetricsCollector, load_measurement, track_metrics
from roastcoffea.cli import main as cli
from roastcoffea.records import drain_local_records

#: (0.1.2's module, a name it holds, our module that must hold the same object).
ALIASES = [
    ("roastcoffea.visualization", "plot_worker_count_timeline", "roastcoffea.plots"),
    ("roastcoffea.visualization.plots", "plot_per_task_cpu_io", "roastcoffea.plots"),
    *(
        (f"roastcoffea.visualization.plots.{module}", name, f"roastcoffea.plots.{module}")
        for module, name in (
            ("chunks", "plot_runtime_distribution"),
            ("cpu", "plot_occupancy_timeline"),
            ("io", "plot_data_access_percentage"),
            ("memory", "plot_memory_utilization_mean_timeline"),
            ("per_task", "extract_per_task_metrics"),
            ("scaling", "plot_efficiency_summary"),
            ("throughput", "plot_throughput_timeline"),
            ("workers", "plot_worker_count_timeline"),
        )
    ),
    ("roastcoffea.export", "load_measurement", "roastcoffea.measurement"),
    ("roastcoffea.export.measurements", "save_measurement", "roastcoffea.measurement"),
    ("roastcoffea.decorator", "track_metrics", "roastcoffea.instrument"),
    ("roastcoffea.instrumentation", "track_time", "roastcoffea.instrument"),
    ("roastcoffea.instrumentation", "track_bytes", "roastcoffea.instrument"),
]


@pytest.mark.parametrize(("old", "name", "ours"), ALIASES)
def test_the_old_module_paths_are_our_objects(old: str, name: str, ours: str) -> None:
    import_module = importlib.import_module
    assert getattr(import_module(old), name) is getattr(import_module(ours), name)


def test_the_backend_interface_can_still_be_subclassed() -> None:
    from roastcoffea.backends.base import AbstractMetricsBackend

    with pytest.raises(TypeError):
        AbstractMetricsBackend()  # type: ignore[abstract]

    class Nothing(AbstractMetricsBackend):
        def start_tracking(self, interval: float) -> None: ...
        def stop_tracking(self) -> dict[str, Any]:
            return {}

        def create_span(self, name: str) -> Any:
            return None

        def get_span_metrics(self, span_id: Any) -> dict[tuple[str, ...], Any]:
            return {}

        def supports_fine_metrics(self) -> bool:
            return False

    assert Nothing().supports_fine_metrics() is False  # fmt: skip


def test_per_task_metrics_take_bytes_then_seconds() -> None:
    from roastcoffea.visualization.plots.per_task import extract_per_task_metrics

    span = {
        ("execute", "proc", "thread-cpu", "seconds"): 2.0,
        ("execute", "proc", "disk-read", "seconds"): 0.5,
        ("execute", "proc", "disk-read", "bytes"): 4096.0,
        ("execute", "proc", "disk-read", "count"): 3.0,
        ("execute", "proc", "memory-read", "count"): 7.0,
        ("get-data", "network", "seconds"): 1.0,  # no prefix: skipped
        ("p2p", "proc", "thread-cpu", "seconds"): 9.0,  # not execute
    }
    assert extract_per_task_metrics(span) == {
        "proc": {"thread-cpu": 2.0, "disk-read": 4096.0, "memory-read": 7.0}
    }
    assert extract_per_task_metrics(span, unit="seconds") == {
        "proc": {"thread-cpu": 2.0, "disk-read": 0.5}
    }


def test_per_task_metrics_of_a_run_sum_its_span_metrics(metrics: dict[str, Any]) -> None:
    from roastcoffea.visualization.plots.per_task import extract_per_task_metrics

    span = metrics["raw_span_metrics"]
    per_task = extract_per_task_metrics(span, unit="seconds")
    for (context, prefix, activity, unit), value in span.items():
        if context == "execute" and unit == "seconds":
            assert per_task[prefix][activity] == pytest.approx(value)


class Counted:
    """A processor whose every call of ``process`` would make a chunk record."""

    @track_metrics
    def process(self, events: Any) -> int:
        return len(events)


def test_the_off_switch_of_0_1_2_turns_records_off() -> None:
    on, off = Counted(), Counted()
    off._roastcoffea_collect_metrics = False  # type: ignore[attr-defined]
    with in_span() as span_id:
        assert on.process(FakeEvents(5)) == 5
        assert off.process(FakeEvents(7)) == 7
    assert [r["num_events"] for r in drain_local_records({span_id})] == [5]


def test_chunk_and_section_records_given_by_hand(roast: Client) -> None:
    with MetricsCollector(roast) as mc:
        pass
    mc.set_coffea_report({"entries": 10, "bytesread": 0, "processtime": 1.0, "chunks": 1})
    mc.record_chunk_metrics({"dataset": "hand", "num_events": 10, "duration": 1.0, "error": None})
    mc.record_section_metrics({"name": "jets", "duration": 0.5})
    assert mc.get_metrics()["num_chunks"] == 1
    assert mc.section_metrics == [{"name": "jets", "duration": 0.5}]


OLD = Path(__file__).parent / "data" / "measurement-0.1.2" / "2026-11-24_11-51-59"


def test_a_measurement_saved_by_0_1_2_loads_with_its_types() -> None:
    metrics, t0, t1 = load_measurement(OLD)
    raw = json.loads((OLD / "metrics.json").read_text())
    tracking = metrics["tracking_data"]
    instants = list(tracking["worker_counts"])
    assert instants and all(isinstance(t, dt.datetime) and t.tzinfo for t in instants)
    assert list(tracking["worker_counts"].values()) == list(
        raw["tracking_data"]["worker_counts"].values()
    )
    for points in tracking["worker_memory"].values():
        assert all(isinstance(t, dt.datetime) for t, _ in points)
    span = metrics["raw_span_metrics"]
    assert span and all(isinstance(key, tuple) and len(key) == 4 for key in span)
    assert sum(span.values()) == pytest.approx(sum(raw["raw_span_metrics"].values()))
    assert metrics["wall_time"] == raw["elapsed_time_seconds"] == pytest.approx(t1 - t0)
    assert metrics["event_rate_wall_khz"] == raw["event_rate_elapsed_khz"]
    assert metrics["total_process_time"] == raw["total_cpu_time"]
    assert metrics["total_cpu_time"] is None
    assert "processtime" in metrics["unavailable"]["total_cpu_time"]


def test_the_command_line_reads_0_1_2_beside_ours(measured: Measured, tmp_path: Path) -> None:
    assert cli(["show", str(OLD)]) == 0
    assert cli(["report", str(OLD), "-o", str(tmp_path / "old.html")]) == 0
    assert cli(["plot", str(OLD), "-o", str(tmp_path / "plots")]) == 0
    # the worker series of 0.1.2 draw: its timelines are there
    names = {p.stem for p in (tmp_path / "plots").glob("*.png")}
    assert {"worker_count", "memory_utilization_mean", "occupancy"} <= names
    assert cli(["compare", str(OLD), str(measured.path)]) == 0


NOTEBOOKS = Path(__file__).parent / "data" / "notebooks"


@pytest.mark.cluster  # the notebook starts its own LocalCluster
def test_the_fine_metrics_notebook_of_0_1_2_runs(
    cms_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROASTCOFFEA_TTBAR", str(cms_data / "nanoAOD_2015_CMS_Open_Data_ttbar.root"))
    notebook = nbformat.read(NOTEBOOKS / "fine_metrics_0.1.2.ipynb", as_version=4)
    NotebookClient(notebook, kernel_name="python3", allow_errors=True, timeout=600).execute()
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    failed = {
        i: f"{o.ename}: {o.evalue}"
        for i, cell in enumerate(code)
        for o in cell.outputs
        if o.output_type == "error"
    }
    ran_under_0_1_2 = set(json.loads((NOTEBOOKS / "ran_under_0.1.2.json").read_text()))
    assert not ran_under_0_1_2 & failed.keys()
    # Beyond that, only the notebook's own bug fails (it calls processor.DaskExecutor on a
    # processor instance, under 0.1.2 too), and the two cells reading the run it broke.
    assert set(failed) == {3, 4, 5, 11}, failed
    assert all("has no attribute 'DaskExecutor'" in failed[i] for i in (3, 11))
    assert all("Coffea report not set" in failed[i] for i in (4, 5))


#: What the README's quick start leaves to the reader: the files and the processor.
README_PRELUDE = """
import awkward as ak
from coffea import processor

class Counter(processor.ProcessorABC):
    def process(self, events):
        return {"events": len(events), "jets": int(ak.sum(ak.num(events.Jet)))}

    def postprocess(self, accumulator):
        return accumulator

fileset = {"ttbar": {"files": {TTBAR: "Events"}}}
my_processor = Counter()
"""


@pytest.mark.cluster  # the README starts its own LocalCluster
def test_the_quick_start_of_the_0_1_2_readme_runs(cms_data: Path, tmp_path: Path) -> None:
    ttbar = repr(str(cms_data / "nanoAOD_2015_CMS_Open_Data_ttbar.root"))
    script = README_PRELUDE.replace("TTBAR", ttbar)
    script += (NOTEBOOKS / "readme_quick_start_0.1.2.py").read_text(encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Throughput:" in done.stdout and "Event rate:" in done.stdout
    assert (tmp_path / "benchmarks" / "my_run" / "metrics.json").is_file()
