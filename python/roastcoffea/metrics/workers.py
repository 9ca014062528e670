"""Worker metrics from the sampler's time series: time-weighted counts, cores and memory.

Source: ``snapshot["series"]``, one point per sample (or per bucket of folded
samples) for every worker, restricted here to the collector's window
``[t_start, t_end]``.

The cluster is seen at *instants*: every sample time of any worker in the
window (a bucket gives two, its first and last sample times, clipped to the
window). A worker is *live* from its first to its last instant in the window,
and between its own instants it keeps its last value (NaN values, which the
worker did not report, are skipped). A cluster quantity at an instant is the
sum over live workers; its time average is the trapezoid integral over the
instants divided by their span (the value itself with a single instant).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from roastcoffea.metrics._util import Metrics, Unavailable, divide

if TYPE_CHECKING:
    from roastcoffea.metrics import MetricsInputs

#: tracking_data key -> series column (roastcoffea 0.1.2 names, then the new ones).
TRACKING_COLUMNS = {
    "worker_memory": "memory",
    "worker_memory_limit": "memory_limit",
    "worker_cores": "nthreads",
    "worker_active_tasks": "processing",
    "worker_executing": "executing",
    "worker_nbytes": "managed",
    "worker_occupancy": "occupancy",
    "worker_last_seen": "last_seen",
    "worker_cpu": "cpu",
    "worker_spilled": "spilled",
    "worker_net_read": "net_read",
    "worker_net_write": "net_write",
    "worker_disk_read": "disk_read",
    "worker_disk_write": "disk_write",
}

WORKER_KEYS = (
    "avg_workers",
    "peak_workers",
    "total_cores",
    "cores_per_worker",
    "peak_memory_bytes",
    "peak_memory_per_worker_bytes",
    "avg_memory_per_worker_bytes",
)


@dataclass(frozen=True)
class Track:
    """One worker's points in the window, expanded to instants.

    Attributes
    ----------
    times : numpy.ndarray
        The worker's instants, ascending.
    point : numpy.ndarray
        For each instant, the index (into the kept points) of its point.
    kept : numpy.ndarray
        Indices of the worker's stored points that overlap the window.
    """

    times: np.ndarray
    point: np.ndarray
    kept: np.ndarray

    def held(self, values: np.ndarray, grid: np.ndarray) -> np.ndarray:
        """The worker's value at each grid instant: 0 where not live, else its last value.

        ``values`` has one value per kept point; NaN values are skipped (the
        previous value holds, 0 before the first reported one).
        """
        reported = ~np.isnan(values)
        last = np.maximum.accumulate(np.where(reported, np.arange(len(values)), -1))
        filled = np.where(last >= 0, values[np.maximum(last, 0)], 0.0)
        at = np.searchsorted(self.times, grid, side="right") - 1
        return np.where(self.live(grid), filled[self.point[np.maximum(at, 0)]], 0.0)

    def live(self, grid: np.ndarray) -> np.ndarray:
        """Whether the worker is live at each grid instant (from its first to its last)."""
        return (grid >= self.times[0]) & (grid <= self.times[-1])


def track(series: dict[str, Any], t_start: float, t_end: float) -> Track | None:
    """The worker's points overlapping ``[t_start, t_end]``, or None when there are none."""
    first = np.asarray(series["t_first"], dtype=float)
    last = np.asarray(series["t_last"], dtype=float)
    kept = np.flatnonzero((last >= t_start) & (first <= t_end))
    if kept.size == 0:
        return None
    begin = np.maximum(first[kept], t_start)
    end = np.minimum(last[kept], t_end)
    # Each point gives its (clipped) first instant, and its last when later.
    instants = np.stack([begin, end], axis=1).ravel()
    distinct = np.ones(instants.size, dtype=bool)
    distinct[1::2] = end > begin
    point = np.repeat(np.arange(kept.size), 2)
    return Track(instants[distinct], point[distinct], kept)


def column(series: dict[str, Any], name: str, stat: str, kept: np.ndarray) -> np.ndarray:
    """One statistic (``mean``, ``min``, ``max``) of a column at the kept points."""
    return np.asarray(series["columns"][name][stat], dtype=float)[kept]


def time_average(values: np.ndarray, grid: np.ndarray) -> float:
    """Trapezoid integral of ``values`` over ``grid`` / its span (one instant: the value)."""
    if grid.size == 1:
        return float(values[0])
    return integral(values, grid) / float(grid[-1] - grid[0])


def integral(values: np.ndarray, grid: np.ndarray) -> float:
    """Trapezoid integral of ``values`` over the instants ``grid``."""
    return float(np.sum((values[1:] + values[:-1]) * np.diff(grid)) / 2.0)


def utc(t: float) -> dt.datetime:
    """A scheduler-clock time as a timezone-aware UTC datetime."""
    return dt.datetime.fromtimestamp(t, tz=dt.timezone.utc)


def compute(inputs: MetricsInputs, out: Metrics) -> None:
    """Put the worker metrics and ``tracking_data``, plus the workers removed in the window."""
    out.put("workers_removed", _removed(inputs))
    if not inputs.track_workers:
        for key in WORKER_KEYS:
            out.missing(key, "worker tracking is off (track_workers=False)")
        out.missing("tracking_data", "worker tracking is off (track_workers=False)")
        return
    series = inputs.snapshot["series"]
    tracks = {
        address: found
        for address in sorted(series)
        if (found := track(series[address], inputs.t_start, inputs.t_end)) is not None
    }
    grid = np.unique(np.concatenate([t.times for t in tracks.values()] or [np.empty(0)]))
    workers = sum((t.live(grid) for t in tracks.values()), start=np.zeros(grid.size))
    out.put("tracking_data", _tracking_data(series, tracks, grid, workers))
    if not tracks:
        for key in WORKER_KEYS:
            out.missing(key, "no worker sample in the collector's time window")
        return
    _put_cluster(out, series, tracks, grid, workers)


def _removed(inputs: MetricsInputs) -> dict[str, float]:
    """{address: removal time} of workers the scheduler removed during the window."""
    return {
        address: info["removed"]
        for address, info in sorted(inputs.snapshot["workers"].items())
        if info["removed"] is not None and inputs.t_start <= info["removed"] <= inputs.t_end
    }


def _put_cluster(
    out: Metrics,
    series: dict[str, Any],
    tracks: dict[str, Track],
    grid: np.ndarray,
    workers: np.ndarray,
) -> None:
    """The time-weighted metrics from the live worker count and cluster sums on ``grid``."""

    def cluster(name: str, stat: str) -> np.ndarray:
        return sum(
            (t.held(column(series[a], name, stat, t.kept), grid) for a, t in tracks.items()),
            start=np.zeros(grid.size),
        )

    cores = cluster("nthreads", "mean")
    memory = cluster("memory", "mean")
    out.put("avg_workers", time_average(workers, grid))
    out.put("peak_workers", int(workers.max()))
    if cores.max() > 0:
        out.put("total_cores", time_average(cores, grid))
    else:
        out.missing("total_cores", "no worker reported its thread count")
    out.derive(
        "cores_per_worker", lambda c, w: divide(c, w, "avg_workers"), "total_cores", "avg_workers"
    )
    peaks = {a: _peak(column(series[a], "memory", "max", t.kept)) for a, t in tracks.items()}
    if any(p is not None for p in peaks.values()):
        out.put("peak_memory_bytes", float(cluster("memory", "max").max()))
        out.put("peak_memory_per_worker_bytes", peaks)
        out.derive("avg_memory_per_worker_bytes", lambda: _per_worker_mean(memory, workers, grid))
    else:
        for key in (
            "peak_memory_bytes",
            "peak_memory_per_worker_bytes",
            "avg_memory_per_worker_bytes",
        ):
            out.missing(key, "no worker reported its memory")


def _peak(values: np.ndarray) -> float | None:
    reported = values[~np.isnan(values)]
    return float(reported.max()) if reported.size else None


def _per_worker_mean(memory: np.ndarray, workers: np.ndarray, grid: np.ndarray) -> float:
    """∫ cluster memory / ∫ live workers: the mean memory of a live worker over time."""
    if grid.size == 1:
        return divide(float(memory[0]), float(workers[0]), "the worker count")
    worker_time = integral(workers, grid)
    if worker_time == 0:
        raise Unavailable("no worker was live for a measurable time")
    return integral(memory, grid) / worker_time


def _tracking_data(
    series: dict[str, Any], tracks: dict[str, Track], grid: np.ndarray, workers: np.ndarray
) -> dict[str, Any]:
    """roastcoffea 0.1.2's ``tracking_data`` from the window's points.

    A point is placed at its sample time; a bucket of folded samples at the
    middle of its span, with its mean. ``resolution`` gives each point's number
    of samples. Unreported values are None.
    """
    data: dict[str, Any] = {
        "worker_counts": {utc(float(u)): int(n) for u, n in zip(grid, workers, strict=True)}
    }
    stamps = {a: _stamps(series[a], t.kept) for a, t in tracks.items()}
    for key, name in TRACKING_COLUMNS.items():
        data[key] = {
            a: _pairs(stamps[a], column(series[a], name, "mean", t.kept)) for a, t in tracks.items()
        }
    data["resolution"] = {
        a: _pairs(stamps[a], np.asarray(series[a]["count"])[t.kept]) for a, t in tracks.items()
    }
    return data


def _pairs(stamps: list[dt.datetime], values: np.ndarray) -> list[tuple[dt.datetime, Any]]:
    """[(time, value)] with Python numbers, None where the value is not finite."""
    listed = values.tolist()
    finite = np.isfinite(values)
    if not finite.all():
        listed = [v if ok else None for v, ok in zip(listed, finite.tolist(), strict=True)]
    return list(zip(stamps, listed, strict=True))


def _stamps(series: dict[str, Any], kept: np.ndarray) -> list[dt.datetime]:
    first = np.asarray(series["t_first"], dtype=float)[kept]
    last = np.asarray(series["t_last"], dtype=float)[kept]
    return [utc(float(t)) for t in (first + last) / 2.0]
