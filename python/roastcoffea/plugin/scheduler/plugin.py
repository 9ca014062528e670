"""RoastPlugin: the scheduler half of roastcoffea's Dask wiring.

Register it once per cluster::

    client.register_plugin(RoastPlugin())

Its ``start`` builds the native aggregator, points the ``transition`` hook
straight at the aggregator's C method, starts the sampler, adds the RPC
handlers ``roastcoffea_snapshot``, ``roastcoffea_flush`` and
``roastcoffea_stop``, adds its series to the Prometheus registry that the
scheduler's ``/metrics`` serves (roastcoffea.plugin.scheduler.prometheus), shows
its page on the scheduler's dashboard at ``/roastcoffea``
(roastcoffea.plugin.scheduler.dashboard), and installs
:class:`RoastWorkerPlugin` on every current and future worker. No hook ever
raises into Dask: failures are counted in the aggregator (``errors`` of every
snapshot) and logged at debug level.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from distributed.diagnostics.plugin import SchedulerPlugin
from distributed.metrics import time

import roastcoffea.config as config
from roastcoffea._native import Aggregator
from roastcoffea.phase_vocabulary import digest_labels
from roastcoffea.plugin.dask_versions import register_worker_plugin
from roastcoffea.plugin.protocol import (
    FINAL_STATE_TOPIC,
    FLUSH_HANDLER,
    PLUGIN_NAME,
    RECORDS_TOPIC,
    SNAPSHOT_HANDLER,
    STOP_HANDLER,
)
from roastcoffea.plugin.scheduler.dashboard import DashboardData
from roastcoffea.plugin.scheduler.dashboard import serve as serve_dashboard
from roastcoffea.plugin.scheduler.dashboard import unserve as unserve_dashboard
from roastcoffea.plugin.scheduler.prometheus import (
    ChunkTotals,
    PrometheusExport,
    available,
    start_export,
    stop_export,
)
from roastcoffea.plugin.scheduler.runs import RunPlacement
from roastcoffea.plugin.scheduler.sampler import Sampler
from roastcoffea.plugin.scheduler.workers import Unmonitored
from roastcoffea.plugin.worker.loader import dumps_by_value
from roastcoffea.records import read_chunk_totals

logger = logging.getLogger(__name__)


class RoastPlugin(SchedulerPlugin):
    """Collects task, worker and span metrics on the Dask scheduler.

    Parameters
    ----------
    interval : float, optional
        Seconds between sampler ticks (worker state samples, payload reads);
        default the setting ``roastcoffea.interval`` (1 s).
    window : int, optional
        Payloads of history each worker payload covers. By default it follows
        each worker's heartbeat period so the sampler never misses a change.
    ring_capacity : int, optional
        Transition records buffered between ticks; overflow is counted as
        ``dropped_events``. Default ``roastcoffea.ring-capacity`` (131072).
    series_cap_bytes : int, optional
        Memory bound of the per-worker time series (older samples are
        decimated, keeping min, max and mean). Default
        ``roastcoffea.series-cap-bytes`` (64 MiB).
    live : bool, optional
        Publish a small delta on the event topic ``"roastcoffea"`` at every
        tick while a client is subscribed. Default ``roastcoffea.live`` (True).
    prometheus : bool, optional
        Add roastcoffea's series to the scheduler's ``/metrics`` (when
        ``prometheus_client`` is installed, as Dask's endpoint needs too).
        Default ``roastcoffea.prometheus`` (True); the label bounds are the
        settings ``roastcoffea.prometheus-max-prefixes``, ``-max-datasets``,
        ``-max-activities`` and ``-max-workers``.
    phase_cpu_interval : float, optional
        Seconds between reads of a processor task's CPU clock by the phase
        clock on the workers (besides a task's start and end, and around its
        waits); between reads a window's CPU is split over its phases by wall,
        its time off CPU charged to its waits first, the error bounded by
        ``phase_cpu_split_bound_seconds``. 0 reads it at every phase switch:
        exact per-phase CPU for about 0.3 ms more per 100,000-event chunk.
        Default ``roastcoffea.phase-cpu-interval`` (1 ms).
    phases : bool, optional
        Run the phase clock on the workers: each processor task's time split
        into open, read, decompress, interpret, user, output and other
        (docs/metrics.md). Off, the phase metrics are None and a chunk costs
        the workers less (docs/performance.md, "What a chunk costs"). Default
        ``roastcoffea.phases`` (True).

    Notes
    -----
    The defaults are read from ``dask.config`` (see ``roastcoffea.yaml``)
    when the plugin is made, on the client; arguments win.

    Raises
    ------
    TypeError, ValueError
        For an argument of the wrong type or out of range.
    """

    name = PLUGIN_NAME
    idempotent = True

    def __init__(
        self,
        interval: float | None = None,
        *,
        window: int | None = None,
        ring_capacity: int | None = None,
        series_cap_bytes: int | None = None,
        live: bool | None = None,
        prometheus: bool | None = None,
        phase_cpu_interval: float | None = None,
        phases: bool | None = None,
    ) -> None:
        self.interval = config.check_interval(config.seconds("interval", interval))
        self.phase_cpu_interval = config.check_phase_cpu_interval(
            config.seconds("phase-cpu-interval", phase_cpu_interval)
        )
        phases = config.setting("phases", phases)
        if not isinstance(phases, bool):
            raise TypeError(f"phases must be a bool, not {type(phases).__name__}")
        self.phases = phases
        self.window = None if window is None else config.whole_number("window", window, 1)
        ring_capacity = config.setting("ring-capacity", ring_capacity)
        self.ring_capacity = config.whole_number(
            "ring_capacity", ring_capacity, 1, config.MAX_RING_CAPACITY
        )
        series_cap_bytes = config.byte_count("series-cap-bytes", series_cap_bytes)
        self.series_cap_bytes = config.whole_number(
            "series_cap_bytes", series_cap_bytes, config.MIN_SERIES_CAP_BYTES
        )
        live = config.setting("live", live)
        if not isinstance(live, bool):
            raise TypeError(f"live must be a bool, not {type(live).__name__}")
        self.live = live
        prometheus = config.setting("prometheus", prometheus)
        if not isinstance(prometheus, bool):
            raise TypeError(f"prometheus must be a bool, not {type(prometheus).__name__}")
        self.prometheus = prometheus
        self.export: PrometheusExport | None = None
        self.dashboard: DashboardData | None = None
        self.chunk_totals: ChunkTotals | None = None
        self.scheduler: Any = None
        self.aggregator: Any = None
        self.sampler: Sampler | None = None
        self.placement: RunPlacement | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Only the configuration travels: the aggregator and the bound C method
        # in `transition` are built by start() on the scheduler.
        return {
            "interval": self.interval,
            "window": self.window,
            "ring_capacity": self.ring_capacity,
            "series_cap_bytes": self.series_cap_bytes,
            "live": self.live,
            "prometheus": self.prometheus,
            "phase_cpu_interval": self.phase_cpu_interval,
            "phases": self.phases,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        interval = state.pop("interval")
        RoastPlugin.__init__(self, interval, **state)

    @property
    def _running(self) -> Sampler:
        """The sampler; RuntimeError before start() (a hook's guard counts it)."""
        if self.sampler is None:
            raise RuntimeError("RoastPlugin is not started on a scheduler")
        return self.sampler

    def __repr__(self) -> str:
        status = "running" if self.sampler is not None and self.sampler.running else "idle"
        return f"<RoastPlugin interval={self.interval}s {status}>"

    async def start(self, scheduler: Any) -> None:
        """Build the aggregator and wire it into the scheduler (Dask calls this).

        Parameters
        ----------
        scheduler : distributed.Scheduler
            The scheduler the plugin was registered on.

        Raises
        ------
        Exception
            Whatever prevented the wiring (e.g. the extension failed to build
            the aggregator); Dask passes it to the registering client, and
            nothing of the plugin is left behind.
        """
        self.scheduler = scheduler
        try:
            self._attach(scheduler)
        except Exception:
            # Dask reports the error to the registering client and does not add
            # the plugin: leave nothing of it behind.
            self._detach()
            raise
        await self._install_worker_plugin()

    def _attach(self, scheduler: Any) -> None:
        """Aggregator, span lookup, known workers, transition hook, handlers, sampler."""
        self.aggregator = Aggregator(
            ring_capacity=self.ring_capacity,
            series_cap_bytes=self.series_cap_bytes,
            started=time(),
        )
        self.placement = RunPlacement(scheduler, self._count_error)
        self.aggregator.set_span_lookup(scheduler.tasks, scheduler.task_groups, self.placement.runs)
        self.sampler = Sampler(scheduler, self.aggregator, self.interval, live=self.live)
        now = time()
        for address, ws in list(scheduler.workers.items()):
            self.sampler.watch(address, ws, now)
        # The instance attribute shadows SchedulerPlugin.transition, so Dask
        # calls the C method with no Python frame in between.
        self.transition = self.aggregator.transition  # type: ignore[method-assign]
        scheduler.handlers[SNAPSHOT_HANDLER] = self._handle_snapshot
        scheduler.handlers[FLUSH_HANDLER] = self._handle_flush
        scheduler.handlers[STOP_HANDLER] = self._handle_stop
        bounds = {
            name.replace("-", "_"): config.whole_number(
                f"prometheus-max-{name}", config.setting(f"prometheus-max-{name}"), 1
            )
            for name in ("prefixes", "datasets", "activities", "workers")
        }
        self.chunk_totals = ChunkTotals(bounds["datasets"])
        if self.prometheus and available():
            self.export = PrometheusExport(
                self,
                self.chunk_totals,
                max_prefixes=bounds["prefixes"],
                max_activities=bounds["activities"],
                max_workers=bounds["workers"],
            )
            start_export(self.export)
        self.dashboard = DashboardData(self, self.chunk_totals)
        serve_dashboard(scheduler, self.dashboard)
        self.sampler.start()

    async def close(self) -> None:
        """Stop the sampler and remove the handlers (Dask calls this on close)."""
        with self._guard("close"):
            self._detach()

    def add_worker(self, scheduler: Any, worker: str) -> None:
        """Record a new worker's arrival (Dask hook; never raises).

        Parameters
        ----------
        scheduler : distributed.Scheduler
        worker : str
            The worker's address.
        """
        with self._guard("add_worker"):
            self._running.watch(worker, scheduler.workers[worker], time())

    def remove_worker(self, scheduler: Any, worker: str, **kwargs: Any) -> None:
        """Apply a leaving worker's last payload, record its departure (Dask hook).

        Dask calls this after the ``WorkerState`` left ``scheduler.workers``;
        the sampler kept a reference to it. Never raises.

        Parameters
        ----------
        scheduler : distributed.Scheduler
        worker : str
            The worker's address.
        **kwargs
            ``stimulus_id`` and whatever later Dask versions add.
        """
        with self._guard("remove_worker"):
            self._running.removed(worker, time(), str(kwargs.get("stimulus_id", "")))

    def log_event(self, topic: str, msg: Any) -> None:
        """Keep records (:data:`RECORDS_TOPIC`), last states of closing workers, closing notices.

        A worker logs ``closing-worker`` on its own address before an orderly
        close (see ``roastcoffea.plugin.scheduler.departures``). Never raises; a
        malformed record is counted.
        """
        if self.sampler is None:
            return
        with self._guard("log_event"):
            if topic == RECORDS_TOPIC:
                self._add_records(msg)
            elif topic == FINAL_STATE_TOPIC:
                self.aggregator.ingest(msg["worker"], msg["data"], time())
            elif (
                isinstance(msg, dict)
                and msg.get("action") == "closing-worker"
                and topic in self.scheduler.workers
            ):
                self.sampler.departures.closing(topic, str(msg.get("reason")))

    def _add_records(self, msg: dict[str, Any]) -> None:
        """Store a task's records with their span; count its chunks in the running totals.

        ``msg`` holds the records' bytes (``data``), their ``span``, the
        :func:`~roastcoffea.records.chunk_totals` of the chunk records among them
        (``chunks``) and the task's phase digests (``phases``): the scheduler
        never decodes a record.
        """
        worker, data, span = msg["worker"], msg["data"], msg.get("span")
        items = data if isinstance(data, (list, tuple)) else [data]  # Dask delivers tuples
        span = span if isinstance(span, str) else None
        now = time()
        for item in items:
            if isinstance(item, bytes):
                self.aggregator.add_record(worker, item, now, span)
            else:
                self._count_error("record_not_bytes")
        for entry in msg.get("phases", ()):
            self._add_phases(worker, entry)
        live = self._running.live
        if live is not None and not live.listening:
            live = None
        for entry in msg.get("chunks", ()):
            try:
                dataset, events, nbytes, duration = read_chunk_totals(entry)
            except ValueError:
                self._count_error("chunk_totals")
                continue
            if live is not None:
                live.add_chunk(events, nbytes)
            if self.chunk_totals is not None:
                self.chunk_totals.add(dataset, events, nbytes, duration)
            if self.dashboard is not None and span is not None:
                self.dashboard.add_run_chunk(span, events, nbytes)

    def _add_phases(self, worker: str, entry: Any) -> None:
        """Add a task's phase digests, sent with its records, to the digest table.

        ``entry`` is ``[span, prefix, output measured, [codec, ...], [helper phase, ...],
        [value, ...], dataset]`` (the worker's ``_phases_entry``); the values are labelled
        as :func:`~roastcoffea.phase_vocabulary.digest_labels` says. Counted when malformed.
        """
        try:
            span, prefix, output_measured, codecs, helpers, values, dataset = entry
            labels = digest_labels((bool(output_measured), tuple(codecs), tuple(helpers)))
            self.aggregator.add_digests(worker, "execute", span, prefix, labels, values)
        except (TypeError, ValueError):
            self._count_error("phase_digests")
            return
        if self.dashboard is not None:
            self.dashboard.add_phases(
                dataset if isinstance(dataset, str) else None,
                labels,
                values,
                span if isinstance(span, str) else None,
            )

    def update_graph(self, scheduler: Any, *, annotations: Any = None, **kwargs: Any) -> None:
        """Place a run's new tasks that Dask grouped under another span (Dask hook).

        Runs after Dask gave the new tasks their spans and before it sends them to
        workers (:mod:`roastcoffea.plugin.scheduler.runs`). Never raises.
        """
        if self.placement is None or not annotations:
            return
        with self._guard("update_graph"):
            self.placement.place(annotations)

    def tick(self) -> None:
        """Run one sampler pass now (the body of the periodic callback).

        Must run on the scheduler's event loop, e.g. through
        ``client.run_on_scheduler``.
        """
        self._running.tick()

    async def _install_worker_plugin(self) -> None:
        """Install RoastWorkerPlugin everywhere; failures are counted and logged.

        What travels is a loader pickled by value (roastcoffea.plugin.worker.loader),
        so a worker that cannot import roastcoffea still starts and computes.
        """
        plugin = dumps_by_value(
            {
                "interval": self.interval,
                "window": self.window,
                "phase_cpu_interval": self.phase_cpu_interval,
                "phases": self.phases,
            }
        )
        try:
            replies = await register_worker_plugin(self.scheduler, plugin, PLUGIN_NAME)
        except Exception:
            self._count_error("register_worker_plugin")
            logger.warning("roastcoffea: worker plugin not installed", exc_info=True)
            return
        for address, reply in replies.items():
            if not (isinstance(reply, dict) and reply.get("status") == "OK"):
                self._count_error("worker_plugin_setup")
                logger.warning("roastcoffea: worker plugin setup failed on %s: %r", address, reply)

    def _handle_snapshot(
        self,
        span_id: str | None = None,
        t_from: float = 0.0,
        t_to: float = 0.0,
        release_unless_inside: str | None = None,
    ) -> bytes:
        """Handler ``roastcoffea_snapshot``: the aggregator as snapshot bytes.

        ``span_id`` keeps that span and its descendants, records included;
        ``t_from``/``t_to`` bound the series (``t_to=0`` is open-ended). With
        ``release_unless_inside`` (a collector's exit), the records of the
        span's subtree are then dropped, unless an enclosing span carries
        that tag: an enclosing collector takes them at its own exit.
        """
        with self._guard("snapshot", reraise=True):
            self.aggregator.drain()
            self._running.spans.sync()
            spans = None if span_id is None else self._running.spans.subtree(span_id)
            data = self.aggregator.snapshot(spans=spans, t_from=float(t_from), t_to=float(t_to))
            if (
                span_id is not None
                and release_unless_inside is not None
                and not self._running.spans.inside(span_id, release_unless_inside)
            ):
                self.aggregator.release_records(spans)
            return data

    async def _handle_flush(
        self, timeout: float | None = None, since: float | None = None
    ) -> dict[str, Any]:
        """Handler ``roastcoffea_flush``: apply every worker's full state now.

        Returns ``{"workers": flushed, "errors": {address: message},
        "unmonitored": {address: reason}, "departures": [...]}``; the
        unmonitored workers (that could not load roastcoffea, now or before
        they left) are not waited for. ``departures`` lists the workers that
        left since ``since`` (scheduler clock; None: none), see
        ``roastcoffea.plugin.scheduler.departures``.
        """
        with self._guard("flush", reraise=True):
            timeout = config.seconds("flush-timeout", timeout)
            now = time()
            workers = list(self.scheduler.workers.items())
            for address, ws in workers:
                self._running.watch(address, ws, now)
            results = await asyncio.gather(
                *(self._running.fetch(address, timeout) for address, _ in workers),
                return_exceptions=True,
            )
            errors = {}
            for (address, _), result in zip(workers, results, strict=True):
                if isinstance(result, Unmonitored):
                    continue
                if isinstance(result, BaseException):
                    self._count_error("flush")
                    errors[address] = f"{type(result).__name__}: {result}"
            self.aggregator.drain()
            self._running.spans.sync()
            unmonitored = dict(self._running.unmonitored)
            flushed = sum(1 for address, _ in workers if address not in unmonitored)
            departures = [] if since is None else self._running.departures.between(since, time())
            return {
                "workers": flushed - len(errors),
                "errors": errors,
                "unmonitored": unmonitored,
                "departures": departures,
            }

    async def _handle_stop(self) -> dict[str, Any]:
        """Handler ``roastcoffea_stop``: undo everything :meth:`start` did.

        Afterwards the plugin is gone from the scheduler and from the workers,
        so registering a new ``RoastPlugin`` starts from scratch.
        """
        self._detach()
        errors: dict[str, str] = {}
        try:
            replies = await self.scheduler.unregister_worker_plugin(None, PLUGIN_NAME)
        except Exception as exc:
            errors["scheduler"] = f"{type(exc).__name__}: {exc}"
            replies = {}
        for address, reply in replies.items():
            if not (isinstance(reply, dict) and reply.get("status") == "OK"):
                errors[address] = repr(reply)
        if self.scheduler.plugins.get(self.name) is self:
            self.scheduler.remove_plugin(name=self.name)
        return {"workers": len(replies) - len(errors), "errors": errors}

    def _detach(self) -> None:
        """Stop the sampler, remove our handlers, make ``transition`` a no-op."""
        # Deleting the instance attribute brings back SchedulerPlugin.transition,
        # which does nothing.
        self.__dict__.pop("transition", None)
        self.placement = None
        if self.export is not None:
            stop_export(self.export)
        if self.dashboard is not None and self.scheduler is not None:
            unserve_dashboard(self.scheduler, self.dashboard)
        if self.sampler is not None:
            self.sampler.stop()
        handlers = self.scheduler.handlers if self.scheduler is not None else {}
        for name, method in (
            (SNAPSHOT_HANDLER, self._handle_snapshot),
            (FLUSH_HANDLER, self._handle_flush),
            (STOP_HANDLER, self._handle_stop),
        ):
            if handlers.get(name) == method:
                del handlers[name]

    @contextmanager
    def _guard(self, where: str, *, reraise: bool = False) -> Iterator[None]:
        """Count and log a failure in ``where``; re-raise only for RPC handlers."""
        try:
            yield
        except Exception:
            self._count_error(where)
            logger.debug("roastcoffea: %s failed", where, exc_info=True)
            if reraise:
                raise

    def _count_error(self, where: str) -> None:
        if self.aggregator is not None:
            self.aggregator.count_error(where)
