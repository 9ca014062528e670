"""RoastPlugin: the scheduler half of roastcoffea's Dask wiring.

Register it once per cluster::

    client.register_plugin(RoastPlugin())

Its ``start`` builds the native aggregator, points the ``transition`` hook
straight at the aggregator's C method, starts the sampler, adds its RPC handlers
(:mod:`roastcoffea.plugin.scheduler.handlers`), takes in what workers send on their
batched streams (its stream handlers, :mod:`~roastcoffea.plugin.scheduler.intake`) into
the aggregator and the running totals (:mod:`~roastcoffea.plugin.scheduler.totals`), adds its series
to the Prometheus registry that the scheduler's ``/metrics`` serves
(:mod:`~roastcoffea.plugin.scheduler.prometheus`), shows its page on the
scheduler's dashboard at ``/roastcoffea``
(:mod:`~roastcoffea.plugin.scheduler.dashboard`), and installs
:class:`RoastWorkerPlugin` on every current and future worker. No hook ever
raises into Dask: failures are counted in the aggregator (``errors`` of every
snapshot) and logged at debug level.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from distributed.diagnostics.plugin import SchedulerPlugin
from distributed.metrics import time

import roastcoffea.config as config
from roastcoffea._native import Aggregator
from roastcoffea.plugin.dask_versions import register_worker_plugin
from roastcoffea.plugin.protocol import FINAL_STATE_OP, PLUGIN_NAME, RECORDS_OP
from roastcoffea.plugin.scheduler.dashboard import DashboardData
from roastcoffea.plugin.scheduler.dashboard import serve as serve_dashboard
from roastcoffea.plugin.scheduler.dashboard import unserve as unserve_dashboard
from roastcoffea.plugin.scheduler.handlers import PluginHandlers
from roastcoffea.plugin.scheduler.intake import RecordIntake, ignore
from roastcoffea.plugin.scheduler.prometheus import (
    PrometheusExport,
    available,
    start_export,
    stop_export,
)
from roastcoffea.plugin.scheduler.runs import RunPlacement
from roastcoffea.plugin.scheduler.sampler import Sampler
from roastcoffea.plugin.scheduler.totals import RunningTotals
from roastcoffea.plugin.worker.loader import dumps_by_value

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
        self.totals: RunningTotals | None = None
        self.intake: RecordIntake | None = None
        self.handlers: dict[str, Any] = {}
        self.stream_handlers: dict[str, Any] = {}
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
    def running(self) -> Sampler:
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
            self.detach()
            raise
        await self._install_worker_plugin()

    def _attach(self, scheduler: Any) -> None:
        """Aggregator, span lookup, known workers, transition hook, handlers, sampler."""
        self.aggregator = Aggregator(
            ring_capacity=self.ring_capacity,
            series_cap_bytes=self.series_cap_bytes,
            started=time(),
        )
        bounds = {
            name.replace("-", "_"): config.whole_number(
                f"prometheus-max-{name}", config.setting(f"prometheus-max-{name}"), 1
            )
            for name in ("prefixes", "datasets", "activities", "workers")
        }
        self.totals = RunningTotals(bounds["datasets"])
        self.placement = RunPlacement(scheduler, self.count_error)
        self.aggregator.set_span_lookup(scheduler.tasks, scheduler.task_groups, self.placement.runs)
        self.sampler = Sampler(
            scheduler, self.aggregator, self.totals, self.interval, live=self.live
        )
        self.intake = RecordIntake(
            self.aggregator, self.totals, self.count_error, self.sampler.collectors.collects
        )
        now = time()
        for address, ws in list(scheduler.workers.items()):
            self.sampler.watch(address, ws, now)
        # The instance attribute shadows SchedulerPlugin.transition, so Dask
        # calls the C method with no Python frame in between.
        self.transition = self.aggregator.transition  # type: ignore[method-assign]
        self.handlers = PluginHandlers(self).table()
        scheduler.handlers.update(self.handlers)
        # Before the worker plugin is installed: its first message may come at once.
        self.stream_handlers = {
            RECORDS_OP: self.intake.records,
            FINAL_STATE_OP: self.intake.final_state,
        }
        scheduler.stream_handlers.update(self.stream_handlers)
        if self.prometheus and available():
            self.export = PrometheusExport(
                self,
                self.totals,
                max_prefixes=bounds["prefixes"],
                max_activities=bounds["activities"],
                max_workers=bounds["workers"],
            )
            start_export(self.export)
        self.dashboard = DashboardData(self, self.totals)
        serve_dashboard(scheduler, self.dashboard)
        self.sampler.start()

    async def close(self) -> None:
        """Stop the sampler and remove the handlers (Dask calls this on close)."""
        with self.guard("close"):
            self.detach()

    def add_worker(self, scheduler: Any, worker: str) -> None:
        """Record a new worker's arrival (Dask hook; never raises).

        Parameters
        ----------
        scheduler : distributed.Scheduler
        worker : str
            The worker's address.
        """
        with self.guard("add_worker"):
            self.running.watch(worker, scheduler.workers[worker], time())

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
        with self.guard("remove_worker"):
            self.running.removed(worker, time(), str(kwargs.get("stimulus_id", "")))

    def log_event(self, topic: str, msg: Any) -> None:
        """Note a worker's closing notice (Dask hook; never raises).

        A worker logs ``closing-worker`` on its own address before an orderly
        close (see ``roastcoffea.plugin.scheduler.departures``).
        """
        if self.intake is None:
            return
        with self.guard("log_event"):
            if (
                isinstance(msg, dict)
                and msg.get("action") == "closing-worker"
                and topic in self.scheduler.workers
            ):
                self.running.departures.closing(topic, str(msg.get("reason")))

    def update_graph(self, scheduler: Any, *, annotations: Any = None, **kwargs: Any) -> None:
        """Place a run's new tasks that Dask grouped under another span, and note the
        runs a collector declared, with its client (Dask hook).

        Runs after Dask gave the new tasks their spans and before it sends them to
        workers (:mod:`roastcoffea.plugin.scheduler.runs`,
        :mod:`~roastcoffea.plugin.scheduler.collectors`). Never raises.
        """
        if self.placement is None or not annotations:
            return
        with self.guard("update_graph"):
            self.placement.place(annotations)
            self.running.collectors.declared(annotations, kwargs.get("client"))

    def tick(self) -> None:
        """Run one sampler pass now (the body of the periodic callback).

        Must run on the scheduler's event loop (a collector's entry and exit run one
        through their handlers).
        """
        self.running.tick()

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
                "scheduler_ops": True,
            }
        )
        try:
            replies = await register_worker_plugin(self.scheduler, plugin, PLUGIN_NAME)
        except Exception:
            self.count_error("register_worker_plugin")
            logger.warning("roastcoffea: worker plugin not installed", exc_info=True)
            return
        for address, reply in replies.items():
            if not (isinstance(reply, dict) and reply.get("status") == "OK"):
                self.count_error("worker_plugin_setup")
                logger.warning("roastcoffea: worker plugin setup failed on %s: %r", address, reply)

    def detach(self) -> None:
        """Stop the sampler, remove the handlers, make ``transition`` a no-op.

        The stream handlers are not removed but made no-ops: workers may still send.
        """
        # Deleting the instance attribute brings back SchedulerPlugin.transition,
        # which does nothing.
        self.__dict__.pop("transition", None)
        self.placement = self.intake = None
        if self.export is not None:
            stop_export(self.export)
        if self.dashboard is not None and self.scheduler is not None:
            unserve_dashboard(self.scheduler, self.dashboard)
        if self.sampler is not None:
            self.sampler.stop()
        handlers = self.scheduler.handlers if self.scheduler is not None else {}
        for name, method in self.handlers.items():
            if handlers.get(name) == method:
                del handlers[name]
        self.handlers = {}
        stream_handlers = self.scheduler.stream_handlers if self.scheduler is not None else {}
        for name, method in self.stream_handlers.items():
            if stream_handlers.get(name) == method:
                stream_handlers[name] = ignore
        self.stream_handlers = {}

    @contextmanager
    def guard(self, where: str, *, reraise: bool = False) -> Iterator[None]:
        """Count and log a failure in ``where``; re-raise only for RPC handlers."""
        try:
            yield
        except Exception:
            self.count_error(where)
            logger.debug("roastcoffea: %s failed", where, exc_info=True)
            if reraise:
                raise

    def count_error(self, where: str) -> None:
        """Count a failure in ``where`` in the aggregator's error table (every snapshot's)."""
        if self.aggregator is not None:
            self.aggregator.count_error(where)
