"""roastcoffea 0.1.2's 21 plot functions and their signatures, the contract the plots keep."""

from __future__ import annotations

from typing import Any


def saved(**defaults: Any) -> dict[str, Any]:
    """``output_path=None`` followed by ``defaults``, in order, as most 0.1.2 plots begin."""
    return {"output_path": None, **defaults}


def timeline(title: str) -> dict[str, Any]:
    """The parameters of 0.1.2's per-worker timelines, in order."""
    return saved(figsize=(12, 6), title=title, max_legend_entries=5)


#: roastcoffea 0.1.2's plot functions: (first argument, other parameters with defaults).
LEGACY: dict[str, tuple[str, dict[str, Any]]] = {
    "plot_runtime_distribution": (
        "chunk_metrics",
        saved(figsize=(10, 6), title="Chunk Runtime Distribution", bins=30),
    ),
    "plot_runtime_vs_events": (
        "chunk_metrics",
        saved(figsize=(10, 6), title="Chunk Runtime vs Number of Events"),
    ),
    "plot_occupancy_timeline": ("tracking_data", timeline("Worker Occupancy Over Time")),
    "plot_executing_tasks_timeline": (
        "tracking_data",
        timeline("Executing Tasks Per Worker Over Time"),
    ),
    "plot_cpu_utilization_per_worker_timeline": (
        "tracking_data",
        timeline("CPU Utilization Per Worker Over Time"),
    ),
    "plot_cpu_utilization_mean_timeline": (
        "tracking_data",
        saved(figsize=(10, 4), title="CPU Utilization Over Time"),
    ),
    "plot_compression_ratio_distribution": (
        "metrics",
        saved(figsize=(10, 6), title="Compression Ratio Distribution Across Files", bins=20),
    ),
    "plot_data_access_percentage": (
        "metrics",
        saved(figsize=(10, 6), title="Bytes Read Percentage Distribution", bins=20),
    ),
    "plot_branch_access_per_chunk": (
        "chunk_metrics",
        saved(figsize=(12, 6), title="Branches Accessed Per Chunk"),
    ),
    "plot_bytes_accessed_per_chunk": (
        "chunk_metrics",
        saved(figsize=(12, 6), title="Bytes Accessed Per Chunk (Compressed vs Uncompressed)"),
    ),
    "plot_memory_utilization_mean_timeline": (
        "tracking_data",
        saved(figsize=(10, 4), title="Memory Utilization Over Time"),
    ),
    "plot_memory_utilization_per_worker_timeline": (
        "tracking_data",
        timeline("Memory Utilization Per Worker Over Time"),
    ),
    "plot_per_task_cpu_io": (
        "span_metrics",
        saved(title="CPU vs Off-CPU Time per Task", figsize=(12, 6)),
    ),
    "plot_per_task_bytes_read": (
        "span_metrics",
        saved(title="Bytes Read per Task", figsize=(12, 6)),
    ),
    "plot_per_task_overhead": (
        "span_metrics",
        saved(title="Compression & Serialization Overhead per Task", figsize=(12, 6)),
    ),
    "plot_efficiency_summary": ("metrics", saved(figsize=(10, 6))),
    "plot_resource_utilization": ("metrics", saved(figsize=(10, 6))),
    "plot_worker_activity_timeline": ("tracking_data", timeline("Worker Activity Over Time")),
    "plot_total_active_tasks_timeline": (
        "tracking_data",
        saved(figsize=(10, 5), title="Total Active Tasks Over Time"),
    ),
    "plot_throughput_timeline": (
        "chunk_info",
        {"tracking_data": None, **saved(figsize=(12, 6), title="Data Throughput Over Time")},
    ),
    "plot_worker_count_timeline": (
        "tracking_data",
        saved(figsize=(10, 4), title="Worker Count Over Time"),
    ),
}
