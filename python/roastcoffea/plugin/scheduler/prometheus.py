"""The Prometheus export: roastcoffea's series on the scheduler's own ``/metrics``.

Dask's scheduler serves ``prometheus_client``'s default registry on its HTTP
port (``/metrics``). A started :class:`~roastcoffea.plugin.RoastPlugin` adds
its series to that registry, so one scrape gets Dask's and ours. The series,
their sources and the bounds of their label sets are listed in
docs/metrics.md ("Prometheus series"); in short:

- fine metrics of the tasks (``execute`` context) summed over spans, per task
  prefix and per worker, in seconds and in bytes; the processor phases per
  worker;
- per dataset: chunks, events and bytes read, from the scheduler's running totals
  (:mod:`roastcoffea.plugin.scheduler.totals`, fed as the chunk records arrive), and
  a histogram of the chunks' ``process()`` durations;
- per worker: memory, memory limit, threads and CPU, read from the
  ``WorkerState`` at the scrape (the values the sampler stores in the series);
- the monitoring's self-report.

Labels never carry span ids (one per run: unbounded). Prefixes, activities and
workers beyond ``roastcoffea.prometheus-max-prefixes``, ``-max-activities`` and
``-max-workers`` (by seconds) and datasets beyond
``roastcoffea.prometheus-max-datasets`` (in order of arrival) are folded into
one label value, and the folds counted. A failure while collecting is counted in the plugin's errors
(``prometheus``), never raised into Dask's endpoint.
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import roastcoffea.phase_vocabulary as vocab
from roastcoffea.plugin.scheduler.totals import CHUNK_DURATION_BUCKETS, FOLDED, RunningTotals
from roastcoffea.plugin.scheduler.workers import worker_values

logger = logging.getLogger(__name__)

#: Self-report counters exported as ``roastcoffea_monitoring_<name>_total``.
MONITORING_COUNTERS = (
    "events",
    "dropped_events",
    "hook_calls",
    "hook_errors",
    "payloads",
    "payload_bytes",
    "payload_errors",
    "records",
    "records_dropped",
    "rows_refused",
    "prefixes_folded",
)
#: (series suffix, help, ``worker_values`` index, scale) of the per-worker gauges.
WORKER_GAUGES = (
    ("memory_bytes", "Process memory of the worker (bytes)", 0, 1.0),
    ("memory_limit_bytes", "Memory limit of the worker (bytes)", 1, 1.0),
    ("threads", "Threads of the worker", 2, 1.0),
    ("cpu_ratio", "CPU use of the worker process, 1 = one core busy", 7, 0.01),
)


def fold_labels(
    totals: dict[tuple[str, str, str], float], index: int, bound: int
) -> tuple[dict[tuple[str, str, str], float], int]:
    """Keep the ``bound`` values of label ``index`` with the most seconds; sum the rest
    as :data:`FOLDED`.

    ``totals`` is keyed ``(label, label, unit)``. Values are ranked by their
    seconds, then by their other units' total, then by name, so the kept set is
    the same at every scrape of the same data. Returns the folded totals and how
    many label values were folded.
    """
    rank: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for key, value in totals.items():
        rank[key[index]][0 if key[2] == "seconds" else 1] += value
    kept = set(sorted(rank, key=lambda v: (-rank[v][0], -rank[v][1], v))[:bound])
    if len(kept) == len(rank):
        return totals, 0
    folded: dict[tuple[str, str, str], float] = defaultdict(float)
    for key, value in totals.items():
        label = key[index] if key[index] in kept else FOLDED
        folded[(label, key[1], key[2]) if index == 0 else (key[0], label, key[2])] += value
    return dict(folded), len(rank) - len(kept)


class PrometheusExport:
    """The series of one running plugin (see the module docstring).

    Parameters
    ----------
    plugin : RoastPlugin
        A started plugin: its aggregator, scheduler and sampler are read at
        each scrape.
    totals : RunningTotals
        The plugin's running totals (their bound is the dataset label set's).
    max_prefixes, max_activities, max_workers : int
        Bounds of the prefix, activity and worker label sets.
    """

    def __init__(
        self,
        plugin: Any,
        totals: RunningTotals,
        max_prefixes: int,
        max_activities: int = 50,
        max_workers: int = 1000,
    ) -> None:
        self.plugin = plugin
        self.max_prefixes = max_prefixes
        self.max_activities = max_activities
        self.max_workers = max_workers
        self.totals = totals
        self.prefixes_folded = self.activities_folded = self.workers_folded = 0

    def families(self) -> Iterator[Any]:
        """Every metric family, from the aggregator's state at this moment."""
        from prometheus_client.core import (
            CounterMetricFamily,
            GaugeMetricFamily,
            HistogramMetricFamily,
        )

        agg = self.plugin.aggregator
        agg.drain()
        by_prefix = agg.digest_totals("execute", "prefix")
        by_worker, self.workers_folded = fold_labels(
            agg.digest_totals("execute", "worker"), 0, self.max_workers
        )
        kept, self.prefixes_folded = fold_labels(
            {k: v for k, v in by_prefix.items() if not vocab.is_phase_activity(k[1])},
            0,
            self.max_prefixes,
        )
        self.activities_folded = 0
        for unit in ("seconds", "bytes"):
            # One family per unit: each holds at most max_activities activities.
            of_unit, folded = fold_labels(
                {k: v for k, v in kept.items() if k[2] == unit}, 1, self.max_activities
            )
            self.activities_folded += folded
            activities = {a for _, a, _ in of_unit}
            per_worker: dict[tuple[str, str], float] = defaultdict(float)
            for (worker, activity, u), value in by_worker.items():
                if u == unit and not vocab.is_phase_activity(activity):
                    per_worker[(worker, activity if activity in activities else FOLDED)] += value
            yield _counter(
                CounterMetricFamily,
                f"roastcoffea_task_{unit}",
                f"Fine metrics of the tasks in {unit} (Dask's execute context), per task prefix",
                ["prefix", "activity"],
                {(p, a): v for (p, a, _), v in of_unit.items()},
            )
            yield _counter(
                CounterMetricFamily,
                f"roastcoffea_worker_task_{unit}",
                f"Fine metrics of the tasks in {unit} (Dask's execute context), per worker",
                ["worker", "activity"],
                dict(per_worker),
            )
        yield from self._phase_families(CounterMetricFamily, by_worker)
        yield from self._chunk_families(CounterMetricFamily, HistogramMetricFamily)
        yield from self._worker_families(GaugeMetricFamily)
        yield from self._monitoring_families(CounterMetricFamily, GaugeMetricFamily)

    def _phase_families(self, counter: Any, by_worker: dict) -> Iterator[Any]:
        phases = vocab.PHASE_OF_ACTIVITY
        for unit, name, what in (
            (vocab.WALL, "phase_wall_seconds", "Wall seconds of the processor phases"),
            (vocab.CPU, "phase_cpu_seconds", "CPU seconds of the processor phases"),
            (vocab.BYTES, "phase_bytes", "Bytes read (read) and produced (decompress)"),
        ):
            yield _counter(
                counter,
                f"roastcoffea_{name}",
                f"{what}, per worker",
                ["worker", "phase"],
                {
                    (w, phases[a]): v
                    for (w, a, u), v in by_worker.items()
                    if u == unit and a in phases
                },
            )

    def _chunk_families(self, counter: Any, histogram: Any) -> Iterator[Any]:
        totals = self.totals
        for name, field, what in (
            ("dataset_chunks", "chunks", "Chunk records received"),
            ("dataset_events", "events", "Events of the chunk records received"),
            ("dataset_bytes_read", "bytes_read", "Bytes the chunks read from their files"),
        ):
            yield _counter(
                counter,
                f"roastcoffea_{name}",
                f"{what}, per dataset",
                ["dataset"],
                {(d,): float(getattr(t, field)) for d, t in totals.datasets.items()},
            )
        cumulative, buckets = 0, []
        for bound, count in zip((*CHUNK_DURATION_BUCKETS, math.inf), totals.buckets, strict=True):
            cumulative += count
            buckets.append(("+Inf" if math.isinf(bound) else repr(bound), cumulative))
        yield histogram(
            "roastcoffea_chunk_duration_seconds",
            "Wall seconds of each chunk's process() (chunk records received)",
            buckets=buckets,
            sum_value=totals.duration_sum,
        )

    def _worker_families(self, gauge: Any) -> Iterator[Any]:
        """The live workers' gauges; beyond the bound (in address order), summed."""
        workers = sorted(self.plugin.scheduler.workers.items())
        for suffix, what, index, scale in WORKER_GAUGES:
            values: dict[str, float] = defaultdict(float)
            for n, (address, ws) in enumerate(workers):
                value = worker_values(ws)[index]
                if value is not None:
                    values[address if n < self.max_workers else FOLDED] += value * scale
            family = gauge(f"roastcoffea_worker_{suffix}", what, labels=["worker"])
            for address, value in values.items():
                family.add_metric([address], value)
            yield family

    def _monitoring_families(self, counter: Any, gauge: Any) -> Iterator[Any]:
        counters = self.plugin.aggregator.counters
        for name in MONITORING_COUNTERS:
            yield counter(
                f"roastcoffea_monitoring_{name}",
                f"roastcoffea's self-report: {name.replace('_', ' ')}",
                value=float(counters[name]),
            )
        yield gauge(
            "roastcoffea_monitoring_series_bytes",
            "Bytes held by the per-worker time series",
            value=float(counters["series_bytes"]),
        )
        if counters.get("hook_ns_per_call") is not None:
            yield gauge(
                "roastcoffea_monitoring_hook_seconds_per_call",
                "Sampled mean cost of the transition hook",
                value=counters["hook_ns_per_call"] * 1e-9,
            )
        for label, folded in (
            ("prefixes", self.prefixes_folded),
            ("activities", self.activities_folded),
            ("workers", self.workers_folded),
        ):
            yield gauge(
                f"roastcoffea_export_{label}_folded",
                f"{label.capitalize()} beyond the bound, exported as {FOLDED!r} at this scrape",
                value=float(folded),
            )


def _counter(family: Any, name: str, what: str, labels: list[str], values: dict) -> Any:
    out = family(name, what, labels=labels)
    for key, value in values.items():
        out.add_metric(list(key), value)
    return out


class _RegistryCollector:
    """The one collector in ``prometheus_client.REGISTRY``: the current export's families.

    Several schedulers may start in one process (tests, notebooks); as Dask's
    own handler does, the series are those of the latest one.
    """

    current: PrometheusExport | None = None

    def describe(self) -> list[Any]:
        return []  # no fixed names: the registry does not call collect() at registration

    def collect(self) -> Iterator[Any]:
        export = self.current
        if export is None:
            return
        try:
            families = list(export.families())
        except Exception:
            export.plugin.count_error("prometheus")
            logger.debug("roastcoffea: Prometheus export failed", exc_info=True)
            return
        yield from families


_COLLECTOR = _RegistryCollector()
_registered = False


def available() -> bool:
    """Whether ``prometheus_client`` (which Dask's ``/metrics`` needs too) can be imported."""
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        return False
    return True


def start_export(export: PrometheusExport) -> None:
    """Serve ``export``'s series on this process's registry (registering it once)."""
    global _registered
    import prometheus_client

    if not _registered:
        prometheus_client.REGISTRY.register(_COLLECTOR)
        _registered = True
    _COLLECTOR.current = export


def stop_export(export: PrometheusExport) -> None:
    """Stop serving ``export``'s series (another plugin's stay)."""
    if _COLLECTOR.current is export:
        _COLLECTOR.current = None
