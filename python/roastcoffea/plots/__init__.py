"""Figures of a measurement, live or loaded from disk.

Every function returns ``(fig, ax)`` made with matplotlib's object API (no
pyplot state is left behind), saves the figure when given ``output_path`` and
raises ``ValueError`` naming the data it lacks. The 21 functions of
roastcoffea 0.1.2 keep their names and signatures; :mod:`.catalog` lists the
figures that apply to a metrics dictionary and saves them all.
"""

from roastcoffea.plots.catalog import PlotEntry, applicable_plots, save_plots
from roastcoffea.plots.chunks import plot_runtime_distribution, plot_runtime_vs_events
from roastcoffea.plots.compare import plot_measurement_comparison, plot_scaling_study
from roastcoffea.plots.cpu import (
    plot_cpu_utilization_mean_timeline,
    plot_cpu_utilization_per_worker_timeline,
    plot_executing_tasks_timeline,
    plot_occupancy_timeline,
)
from roastcoffea.plots.datasets import plot_dataset_runtimes
from roastcoffea.plots.fine import plot_fine_metrics_heatmap, plot_processor_overhead_breakdown
from roastcoffea.plots.io import (
    plot_branch_access_per_chunk,
    plot_bytes_accessed_per_chunk,
    plot_compression_ratio_distribution,
    plot_data_access_percentage,
)
from roastcoffea.plots.memory import (
    plot_memory_utilization_mean_timeline,
    plot_memory_utilization_per_worker_timeline,
)
from roastcoffea.plots.per_task import (
    plot_per_task_bytes_read,
    plot_per_task_cpu_io,
    plot_per_task_overhead,
)
from roastcoffea.plots.phases import (
    plot_phase_heatmap,
    plot_phase_shares_per_dataset,
    plot_phase_timeline,
)
from roastcoffea.plots.profile import plot_profile_icicle
from roastcoffea.plots.scaling import plot_efficiency_summary, plot_resource_utilization
from roastcoffea.plots.throughput import (
    plot_throughput_timeline,
    plot_total_active_tasks_timeline,
    plot_worker_activity_timeline,
)
from roastcoffea.plots.timeline import plot_prefix_timeline
from roastcoffea.plots.wall_split import plot_wall_split
from roastcoffea.plots.workers import plot_worker_count_timeline

__all__ = [
    "PlotEntry",
    "applicable_plots",
    "plot_branch_access_per_chunk",
    "plot_bytes_accessed_per_chunk",
    "plot_compression_ratio_distribution",
    "plot_cpu_utilization_mean_timeline",
    "plot_cpu_utilization_per_worker_timeline",
    "plot_data_access_percentage",
    "plot_dataset_runtimes",
    "plot_efficiency_summary",
    "plot_executing_tasks_timeline",
    "plot_fine_metrics_heatmap",
    "plot_measurement_comparison",
    "plot_memory_utilization_mean_timeline",
    "plot_memory_utilization_per_worker_timeline",
    "plot_occupancy_timeline",
    "plot_per_task_bytes_read",
    "plot_per_task_cpu_io",
    "plot_per_task_overhead",
    "plot_phase_heatmap",
    "plot_phase_shares_per_dataset",
    "plot_phase_timeline",
    "plot_prefix_timeline",
    "plot_processor_overhead_breakdown",
    "plot_profile_icicle",
    "plot_resource_utilization",
    "plot_runtime_distribution",
    "plot_runtime_vs_events",
    "plot_scaling_study",
    "plot_throughput_timeline",
    "plot_total_active_tasks_timeline",
    "plot_wall_split",
    "plot_worker_activity_timeline",
    "plot_worker_count_timeline",
    "save_plots",
]
