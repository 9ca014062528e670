"""The nodes the workers ran on: their cores, runnable threads, load and stolen time.

Source: the ``node_*`` columns of the workers' series in the collector's window, which
each worker reads from Linux's ``/proc`` at its heartbeats
(:mod:`roastcoffea.plugin.worker.node`), and the workers' ``nthreads`` and
``executing``. Workers are grouped by host (their address's): the workers of one node
report the same node. Per host:

- ``cores``: the node's online CPUs; ``threads``: the worker threads Dask gave the
  workers on it; ``executing_mean``: their tasks executing, on average;
- ``runnable_mean``, ``runnable_max``: the node's runnable threads (``procs_running``,
  every process's, the workers' own included, and the worker thread reading it), mean
  over the samples and largest;
- ``load_mean``: the 1-minute load average, mean over the samples;
- ``steal_percent``: the share of the node's CPU time its hypervisor gave to other
  guests (a virtual machine's ``steal``), mean over the heartbeat intervals.

A mean weights each series point by the samples it covers (a folded bucket's mean
covers its samples); the per-host figures add the host's workers' ``nthreads`` and
``executing`` and take the node's own columns from any of them.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import numpy as np

from roastcoffea.metrics._util import Metrics
from roastcoffea.metrics.workers import column, track

if TYPE_CHECKING:
    from roastcoffea.metrics import MetricsInputs


def host_of(address: str) -> str:
    """The host of a worker's address (``tcp://10.0.0.5:4000`` is ``10.0.0.5``)."""
    host = urlsplit(address).hostname if "://" in address else None
    return host or address.rsplit(":", 1)[0]


def compute(inputs: MetricsInputs, out: Metrics) -> None:
    """Put ``node_per_host``, or why the nodes were not seen."""
    if not inputs.track_workers:
        out.missing("node_per_host", "worker tracking is off (track_workers=False)")
        return
    hosts: dict[str, list[tuple[dict[str, Any], np.ndarray]]] = defaultdict(list)
    for address, series in inputs.snapshot["series"].items():
        seen = track(series, inputs.t_start, inputs.t_end)
        if seen is not None and "node_runnable" in series["columns"]:
            hosts[host_of(address)].append((series, seen.kept))
    table = {host: _host(workers) for host, workers in sorted(hosts.items())}
    table = {host: row for host, row in table.items() if row["runnable_mean"] is not None}
    if table:
        out.put("node_per_host", table)
    else:
        out.missing(
            "node_per_host",
            "no worker reported its node (Linux's /proc/stat and /proc/loadavg, read by the "
            "worker plugin at each heartbeat)",
        )


def _host(workers: list[tuple[dict[str, Any], np.ndarray]]) -> dict[str, Any]:
    """One host's figures from its workers' kept points."""

    def mean(name: str, series: dict[str, Any], kept: np.ndarray) -> float | None:
        values = column(series, name, "mean", kept)
        weights = np.asarray(series["count"], dtype=float)[kept]
        known = ~np.isnan(values)
        if not known.any() or weights[known].sum() <= 0:
            return None
        return float(np.average(values[known], weights=weights[known]))

    def largest(name: str, series: dict[str, Any], kept: np.ndarray) -> float | None:
        values = column(series, name, "max", kept)
        return float(np.nanmax(values)) if (~np.isnan(values)).any() else None

    series, kept = max(workers, key=lambda w: w[1].size)  # the node's columns: any worker's
    threads = [largest("nthreads", s, k) for s, k in workers]
    executing = [mean("executing", s, k) for s, k in workers]
    return {
        "cores": largest("node_cores", series, kept),
        "threads": _sum(threads),
        "executing_mean": _sum(executing),
        "runnable_mean": mean("node_runnable", series, kept),
        "runnable_max": largest("node_runnable", series, kept),
        "load_mean": mean("node_load", series, kept),
        "steal_percent": mean("node_steal", series, kept),
    }


def _sum(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return float(sum(known)) if known else None
