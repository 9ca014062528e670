"""How well the run used the cluster: core efficiency, speedup, time off CPU, per-core rate.

Ratios of the fine metrics (CPU and task seconds of the span), the worker
metrics (time-averaged cores) and the wall time.
"""

from __future__ import annotations

from roastcoffea.metrics._util import Metrics, divide


def compute(out: Metrics) -> None:
    """Put core_efficiency, speedup_factor, io_overhead_percent and event_rate_core_hz/khz.

    Every input is a metric of the fine, worker or workflow group, which must
    have run.
    """
    out.derive(
        "core_efficiency",
        lambda cpu, cores, wall: cpu / (cores * wall),
        "total_cpu_time",
        "total_cores",
        "wall_time",
    )
    out.derive(
        "speedup_factor",
        lambda busy, wall: busy / wall,
        "processor_task_time_seconds",
        "wall_time",
    )
    out.derive(
        "io_overhead_percent",
        lambda cpu, noncpu: 100.0 * divide(noncpu, cpu + noncpu, "processor thread time"),
        "processor_cpu_time_seconds",
        "processor_noncpu_time_seconds",
    )
    out.derive(
        "event_rate_core_hz",
        lambda events, wall, cores: events / (wall * cores),
        "total_events",
        "wall_time",
        "total_cores",
    )
    out.derive("event_rate_core_khz", lambda hz: hz / 1e3, "event_rate_core_hz")
