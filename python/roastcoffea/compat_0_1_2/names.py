"""The names roastcoffea 0.1.2 used: its metric keys and its measurement format.

A leaf: the metrics put each alias beside the key it names, and the loader reads 0.1.2's
files by its format.
"""

from __future__ import annotations

#: 0.1.2's names of the workflow group's keys (roastcoffea.metrics.workflow).
WORKFLOW_ALIASES = {
    "elapsed_time_seconds": "wall_time",
    "total_bytes_read": "bytes_read_compressed",
    "data_rate_gbps": "overall_rate_gbps",
    "event_rate_elapsed_khz": "event_rate_wall_khz",
    "event_rate_cpu_total_khz": "event_rate_agg_khz",
}

#: 0.1.2's names of the fine-metrics group's keys (roastcoffea.metrics.fine).
FINE_ALIASES = {
    "processor_io_wait_time_seconds": "processor_noncpu_time_seconds",
    "overhead_io_wait_time_seconds": "overhead_noncpu_time_seconds",
    "processor_cpu_percent": "processor_cpu_percentage",
    "processor_io_wait_percent": "processor_noncpu_percentage",
    "total_bytes_memory_read": "total_bytes_memory_read_dask",
}

#: Every 0.1.2 name of one of our keys.
METRIC_ALIASES = {**WORKFLOW_ALIASES, **FINE_ALIASES}

#: Our metrics that 0.1.2 computed differently under its name (docs/metrics.md,
#: "Differences from roastcoffea 0.1.2"): a 0.1.2 file does not fill them.
DIFFERENT_IN_0_1_2 = frozenset({"event_rate_agg_khz"})

#: The ``format`` that roastcoffea 0.1.2 wrote in ``metadata.json``.
LEGACY_FORMAT = "roastcoffea_measurement_v1"

#: Key under which roastcoffea 0.1.2's decorator put chunk records in coffea's output.
OUTPUT_KEY = "__roastcoffea_metrics__"
