"""The plot API: roastcoffea 0.1.2's 21 functions with their signatures, and ours."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

import roastcoffea
from roastcoffea import plots


def timeline(title: str) -> dict[str, object]:
    """The parameters of 0.1.2's per-worker timelines, in order."""
    return {"output_path": None, "figsize": (12, 6), "title": title, "max_legend_entries": 5}


#: roastcoffea 0.1.2's plot functions: (first argument, other parameters with defaults).
LEGACY = {
    "plot_runtime_distribution": (
        "chunk_metrics",
        {"output_path": None, "figsize": (10, 6), "title": "Chunk Runtime Distribution",
         "bins": 30},
    ),
    "plot_runtime_vs_events": (
        "chunk_metrics",
        {"output_path": None, "figsize": (10, 6), "title": "Chunk Runtime vs Number of Events"},
    ),
    "plot_occupancy_timeline": (
        "tracking_data", timeline("Worker Occupancy Over Time"),
    ),
    "plot_executing_tasks_timeline": (
        "tracking_data", timeline("Executing Tasks Per Worker Over Time"),
    ),
    "plot_cpu_utilization_per_worker_timeline": (
        "tracking_data", timeline("CPU Utilization Per Worker Over Time"),
    ),
    "plot_cpu_utilization_mean_timeline": (
        "tracking_data",
        {"output_path": None, "figsize": (10, 4), "title": "CPU Utilization Over Time"},
    ),
    "plot_compression_ratio_distribution": (
        "metrics",
        {"output_path": None, "figsize": (10, 6),
         "title": "Compression Ratio Distribution Across Files", "bins": 20},
    ),
    "plot_data_access_percentage": (
        "metrics",
        {"output_path": None, "figsize": (10, 6), "title": "Bytes Read Percentage Distribution",
         "bins": 20},
    ),
    "plot_branch_access_per_chunk": (
        "chunk_metrics",
        {"output_path": None, "figsize": (12, 6), "title": "Branches Accessed Per Chunk"},
    ),
    "plot_bytes_accessed_per_chunk": (
        "chunk_metrics",
        {"output_path": None, "figsize": (12, 6),
         "title": "Bytes Accessed Per Chunk (Compressed vs Uncompressed)"},
    ),
    "plot_memory_utilization_mean_timeline": (
        "tracking_data",
        {"output_path": None, "figsize": (10, 4), "title": "Memory Utilization Over Time"},
    ),
    "plot_memory_utilization_per_worker_timeline": (
        "tracking_data", timeline("Memory Utilization Per Worker Over Time"),
    ),
    "plot_per_task_cpu_io": (
        "span_metrics",
        {"output_path": None, "title": "CPU vs I/O Time per Task", "figsize": (12, 6)},
    ),
    "plot_per_task_bytes_read": (
        "span_metrics", {"output_path": None, "title": "Bytes Read per Task", "figsize": (12, 6)},
    ),
    "plot_per_task_overhead": (
        "span_metrics",
        {"output_path": None, "title": "Compression & Serialization Overhead per Task",
         "figsize": (12, 6)},
    ),
    "plot_efficiency_summary": ("metrics", {"output_path": None, "figsize": (10, 6)}),
    "plot_resource_utilization": ("metrics", {"output_path": None, "figsize": (10, 6)}),
    "plot_worker_activity_timeline": (
        "tracking_data", timeline("Worker Activity Over Time"),
    ),
    "plot_total_active_tasks_timeline": (
        "tracking_data",
        {"output_path": None, "figsize": (10, 5), "title": "Total Active Tasks Over Time"},
    ),
    "plot_throughput_timeline": (
        "chunk_info",
        {"tracking_data": None, "output_path": None, "figsize": (12, 6),
         "title": "Data Throughput Over Time"},
    ),
    "plot_worker_count_timeline": (
        "tracking_data",
        {"output_path": None, "figsize": (10, 4), "title": "Worker Count Over Time"},
    ),
}  # fmt: skip

NEW = (
    "plot_fine_metrics_heatmap",
    "plot_processor_overhead_breakdown",
    "plot_prefix_timeline",
    "plot_dataset_runtimes",
    "plot_measurement_comparison",
    "plot_scaling_study",
)


@pytest.mark.parametrize("name", sorted(LEGACY))
def test_legacy_signature(name: str) -> None:
    first, defaults = LEGACY[name]
    parameters = list(inspect.signature(getattr(plots, name)).parameters.values())
    assert parameters[0].name == first
    assert parameters[0].default is inspect.Parameter.empty
    assert [p.name for p in parameters[1:]] == list(defaults)
    assert {p.name: p.default for p in parameters[1:]} == defaults


def test_every_plot_is_exported_here_and_at_the_top_level() -> None:
    assert len(LEGACY) == 21
    for name in (*LEGACY, *NEW):
        assert name in plots.__all__
        assert getattr(roastcoffea, name) is getattr(plots, name)
        assert getattr(plots, name).__doc__
    assert roastcoffea.plots is plots
    with pytest.raises(AttributeError, match="plot_nothing"):
        roastcoffea.plot_nothing  # noqa: B018


def test_importing_roastcoffea_does_not_import_matplotlib() -> None:
    # Workers import roastcoffea for the plugin and the instrumentation only.
    code = "import sys, roastcoffea; print('matplotlib' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "False", result.stderr
