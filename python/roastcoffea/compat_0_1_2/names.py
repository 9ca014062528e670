"""The names roastcoffea 0.1.2 used: its metric keys and its measurement format.

A leaf: the metrics dictionary answers to each alias with the key it names, and the
loader reads 0.1.2's files by its format and under our names.
"""

from __future__ import annotations

#: 0.1.2's names of the workflow group's keys (roastcoffea.metrics.workflow).
WORKFLOW_ALIASES = {
    "elapsed_time_seconds": "wall_time",
    "total_bytes_read": "bytes_read_compressed",
    "data_rate_gbps": "overall_rate_gbps",
    "overall_rate_mbs": "overall_rate_mb_s",
    "event_rate_elapsed_khz": "event_rate_wall_khz",
    "event_rate_cpu_total_khz": "event_rate_agg_khz",
}

#: 0.1.2's names of the fine-metrics group's keys (roastcoffea.metrics.fine); the
#: ``_percentage`` ones are those its documentation used.
FINE_ALIASES = {
    "processor_io_wait_time_seconds": "processor_noncpu_time_seconds",
    "overhead_io_wait_time_seconds": "overhead_noncpu_time_seconds",
    "processor_io_wait_percent": "processor_noncpu_percent",
    "processor_cpu_percentage": "processor_cpu_percent",
    "processor_noncpu_percentage": "processor_noncpu_percent",
    "total_bytes_memory_read": "total_bytes_memory_read_dask",
}

#: 0.1.2's names of keys of the other groups: its ``_mb`` were MiB, its ``_pct`` percent.
OTHER_ALIASES = {
    "io_overhead_pct": "io_overhead_percent",
    **{
        f"chunk_mem_delta_{s}_mb": f"chunk_mem_delta_{s}_mib" for s in ("mean", "min", "max", "std")
    },
}

#: Every 0.1.2 name of one of our keys: read as ours, never stored (MetricsDict).
METRIC_ALIASES = {**WORKFLOW_ALIASES, **FINE_ALIASES, **OTHER_ALIASES}

#: 0.1.2's names of chunk-record fields, renamed when its measurements are read.
RECORD_ALIASES = {f"mem_{s}_mb": f"mem_{s}_mib" for s in ("before", "after", "delta")}

#: Our metrics that 0.1.2 computed differently under its name (docs/metrics.md,
#: "Differences from roastcoffea 0.1.2"): a 0.1.2 file does not fill them.
DIFFERENT_IN_0_1_2 = frozenset({"event_rate_agg_khz"})

#: The ``format`` that roastcoffea 0.1.2 wrote in ``metadata.json``.
LEGACY_FORMAT = "roastcoffea_measurement_v1"

#: Key under which roastcoffea 0.1.2's decorator put chunk records in coffea's output.
OUTPUT_KEY = "__roastcoffea_metrics__"
