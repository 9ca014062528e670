"""Code written for roastcoffea 0.1.2 imports and runs against ours (docs/compat.md)."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from distributed import Client
from test_instrument import FakeEvents, in_span

from roastcoffea import MetricsCollector, track_metrics
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
