"""Tables of :mod:`roastcoffea.metrics.workflow`: throughput, events and rates, timing.

The titles roastcoffea 0.1.2 had are kept: "Throughput Metrics", "Event Processing
Metrics", "Timing Breakdown".
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from roastcoffea.report.tables.cells import (
    Cell,
    TableData,
    count,
    is_number,
    khz,
    kv_rows,
    kv_table,
    microseconds,
    number,
    per_core,
    value_cell,
)
from roastcoffea.units import format_byte_rate, format_bytes, format_gbps, format_rate, format_time


def throughput_table(metrics: Mapping[str, Any]) -> TableData:
    """Data rate and bytes read."""
    rate = metrics.get("overall_rate_gbps")
    if is_number(rate) and math.isfinite(rate):
        rate_cell = Cell(f"{format_gbps(rate)} ({format_byte_rate(rate * 1e9 / 8)})")
    else:
        rate_cell = value_cell(metrics, "overall_rate_gbps", str)
    rows = [(Cell("Data Rate"), rate_cell)]
    rows += kv_rows(
        metrics,
        (
            ("Processor CPU per Event", "cpu_us_per_event", microseconds),
            ("Events per Core-Second (processor CPU)", "events_per_cpu_second", format_rate),
            ("Bytes Read (compressed)", "bytes_read_compressed", format_bytes),
            ("Bytes Read (uncompressed)", "bytes_read_uncompressed", format_bytes),
            ("Compression Ratio", "compression_ratio", number(2, "x")),
            ("Memory Read (Dask Spans)", "total_bytes_memory_read_dask", format_bytes),
        ),
    )
    note = (
        "Compressed: what coffea requested from the files (its bytesread). Uncompressed: the "
        "baskets (an RNTuple's pages) the chunks decompressed, from the files' own metadata; "
        "a basket serving two chunks counts for each, so the two are not a compression "
        "ratio, which counts each basket once."
    )
    return kv_table("Throughput Metrics", rows, note)


def event_processing_table(metrics: Mapping[str, Any]) -> TableData:
    """Events and event rates."""
    rows = kv_rows(
        metrics,
        (
            ("Total Events", "total_events", count),
            ("Event Rate (Wall Time)", "event_rate_wall_khz", khz),
            ("Event Rate (per Processor-Second)", "event_rate_agg_khz", khz),
            ("Event Rate (per Core)", "event_rate_core_hz", per_core),
        ),
    )
    return kv_table("Event Processing Metrics", rows)


def timing_table(metrics: Mapping[str, Any]) -> TableData:
    """Wall time, CPU time and chunks."""
    rows = kv_rows(
        metrics,
        (
            ("Wall Time", "wall_time", format_time),
            ("Total CPU Time (thread-cpu)", "total_cpu_time", format_time),
            ("Processor Task Time", "processor_task_time_seconds", format_time),
            ("Coffea Process Time", "total_process_time", format_time),
            ("Number of Chunks", "num_chunks", count),
            ("Avg CPU Time/Chunk", "avg_cpu_time_per_chunk", format_time),
        ),
    )
    note = (
        "Wall time: the collector's block, one clock. The other three add up many threads: "
        "total CPU time is the CPU every task of the run used (processor and overhead); "
        "processor task time is the processor tasks' time on the workers, on or off the CPU; "
        "coffea process time is the wall time of the process() calls alone, inside those "
        "tasks (coffea's processtime). So process time is at most processor task time, which "
        "is at most wall time times the threads."
    )
    return kv_table("Timing Breakdown", rows, note)
