"""RoastWorkerPlugin: the worker half, installed by :class:`RoastPlugin`.

It adds two things to the worker, both public and version-stable Dask
mechanisms (never a worker extension: one the scheduler does not know closes the
worker):

* ``worker.metrics["roastcoffea"]``, a callable Dask runs at every heartbeat,
  whose bytes reach the scheduler as ``ws.metrics["roastcoffea"]``, and
  ``worker.metrics["roastcoffea-node"]``, the node's cores, load and steal (:mod:`.node`);
* ``worker.handlers["roastcoffea_worker_state"]``, an RPC handler that answers
  with the full cumulative state (used by flushes and after missed payloads).

Its ``transition`` hook makes a task execute in its run's span
(:mod:`roastcoffea.plugin.scheduler.runs`), announces the task prefixes that run coffea
work items (:mod:`.work_items`), and sends each task's records and phase digests when it
ends (:mod:`.outbox`, as ops of the worker's batched stream that only a scheduler with
``RoastPlugin`` is told to expect); the phase digests are also summed for Dask's own span
totals (:mod:`.phase_sums`).
"""

from __future__ import annotations

import logging
import math
import threading
from typing import Any

from dask.utils import key_split
from distributed.diagnostics.plugin import WorkerPlugin
from distributed.spans import CONTEXTS_WITH_SPAN_ID

from roastcoffea._native import DigestTracker
from roastcoffea.instrument import _phase_hooks
from roastcoffea.instrument import phases as phase_clock
from roastcoffea.instrument.running import set_lookup
from roastcoffea.phase_vocabulary import ACTIVITY_PREFIXES, PhaseDigests
from roastcoffea.plugin.protocol import (
    NODE_METRIC,
    PLACED_ANNOTATION,
    PLUGIN_NAME,
    WORKER_STATE_HANDLER,
    ChunkTotals,
)
from roastcoffea.plugin.task import running_task
from roastcoffea.plugin.worker.node import NodeView
from roastcoffea.plugin.worker.outbox import RUNNING_STATES, Outbox
from roastcoffea.plugin.worker.phase_sums import PhaseSums
from roastcoffea.plugin.worker.phases import digest_task_phases
from roastcoffea.plugin.worker.work_items import ProcessorTasks
from roastcoffea.records import RECORD_VERSION, decode_record

logger = logging.getLogger(__name__)

#: The plugin's counters (:meth:`RoastWorkerPlugin.instrument_counters`).
COUNTERS = (
    "chunks",
    "chunks_with_task",
    "pending_overflow",
    "prefix_records",
    "announced_resets",
    "records_refused",
    "encode_errors",
    "hook_errors",
    "phase_records",
    "records_lost",
)


def auto_window(sampler_interval: float, heartbeat_ms: float) -> int:
    """Payloads of history each payload must cover so the sampler misses none.

    The sampler reads ``ws.metrics`` once per ``sampler_interval``; meanwhile
    ``ceil(sampler_interval / heartbeat_interval)`` heartbeats may replace it.
    Two more absorb jitter of either clock.

    Parameters
    ----------
    sampler_interval : float
        Seconds between the scheduler sampler's ticks.
    heartbeat_ms : float
        The worker's heartbeat period in milliseconds.

    Returns
    -------
    int
    """
    if not heartbeat_ms > 0:
        return 4
    return math.ceil(sampler_interval * 1000.0 / heartbeat_ms) + 2


class RoastWorkerPlugin(WorkerPlugin):
    """Sends the worker's fine performance metrics, its tasks' records and phases.

    Parameters
    ----------
    interval : float
        The scheduler sampler's interval in seconds (sizes the window).
    window : int, optional
        Fixed number of payloads each payload covers; by default it follows the
        heartbeat period (:func:`auto_window`).
    phase_cpu_interval : float
        Seconds between the phase clock's reads of a task's CPU clock
        (:class:`~roastcoffea.instrument.phases.TaskPhases`).
    phases : bool
        Whether to run the phase clock (install the phase hooks) on the worker.
    scheduler_ops : bool
        Whether the scheduler handles roastcoffea's stream ops (``RoastPlugin`` says so
        when it installs this plugin). Without, no record is sent (``records_refused``):
        an op the scheduler does not know would close the worker.
    """

    name = PLUGIN_NAME
    idempotent = True

    def __init__(
        self,
        interval: float = 1.0,
        window: int | None = None,
        phase_cpu_interval: float = phase_clock.CPU_INTERVAL,
        phases: bool = True,
        scheduler_ops: bool = False,
    ) -> None:
        self.interval = float(interval)
        self.window = window
        self.phase_cpu_interval = float(phase_cpu_interval)
        self.phases = bool(phases)
        self._tracker: Any = None
        self._worker: Any = None
        self._lock = threading.Lock()  # the counters: task threads and the loop count
        self.counters: dict[str, int] = dict.fromkeys(COUNTERS, 0)
        self._phase_sums = PhaseSums(self._count)
        self._processor_tasks = ProcessorTasks(self._count)
        self._outbox = Outbox(None, self._count, self._phase_sums.add, bool(scheduler_ops))
        self._node = NodeView()
        #: Why the phase hooks are not installed, or None when they are.
        self.phase_hooks_error: str | None = "not set up on a worker"

    def __getstate__(self) -> dict[str, Any]:
        return {
            "interval": self.interval,
            "window": self.window,
            "phase_cpu_interval": self.phase_cpu_interval,
            "phases": self.phases,
            "scheduler_ops": self._outbox.scheduler_ops,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        RoastWorkerPlugin.__init__(self, **state)

    def setup(self, worker: Any) -> None:
        """Install the heartbeat metric and the state handler on ``worker``."""
        self._worker = self._outbox.worker = worker
        self._tracker = DigestTracker(
            worker.id,
            self.window or 4,
            followed=CONTEXTS_WITH_SPAN_ID,
            sent_apart=ACTIVITY_PREFIXES,
        )
        worker.metrics[PLUGIN_NAME] = self._payload
        worker.metrics[NODE_METRIC] = self._node
        worker.handlers[WORKER_STATE_HANDLER] = self._full_state
        set_lookup(running_task)
        if not self.phases:
            self.phase_hooks_error = "turned off (RoastPlugin phases=False)"
            return
        try:
            _phase_hooks.install()
        except Exception as exc:  # no coffea or uproot here, or a version we cannot hook
            self.phase_hooks_error = f"{type(exc).__name__}: {exc}"
            logger.debug("roastcoffea phase hooks not installed", exc_info=True)
        else:
            self.phase_hooks_error = None
            phase_clock.set_sink(digest_task_phases, cpu_interval=self.phase_cpu_interval)

    def teardown(self, worker: Any) -> None:
        """Send what is held and the full state a last time, then remove what
        :meth:`setup` installed.

        Dask tears plugins down before it closes the worker's stream to the
        scheduler, so the records of tasks still running and the digests of tasks
        that finished after the last heartbeat still arrive (op
        :data:`~roastcoffea.plugin.protocol.FINAL_STATE_OP`).
        """
        if self._tracker is not None:
            try:
                self._outbox.send_all()
                self._phase_sums.file(worker.digest_metric)
                self._outbox.send_final_state(self._tracker.full_payload(worker.digests_total))
            except Exception:
                self._count("hook_errors")
                logger.debug("roastcoffea final state not sent", exc_info=True)
        if worker.metrics.get(PLUGIN_NAME) == self._payload:
            del worker.metrics[PLUGIN_NAME]
        if worker.metrics.get(NODE_METRIC) is self._node:
            del worker.metrics[NODE_METRIC]
        if worker.handlers.get(WORKER_STATE_HANDLER) == self._full_state:
            del worker.handlers[WORKER_STATE_HANDLER]
        if self.phase_hooks_error is None:
            _phase_hooks.uninstall()
            if not _phase_hooks.installed():
                phase_clock.set_sink(None)
            self.phase_hooks_error = "torn down"
        self._phase_sums.clear()
        self._processor_tasks.clear()
        self._tracker = None
        self._worker = self._outbox.worker = None

    def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
        """Worker hook: a task's run span, its prefix announced, its records sent.

        As a task starts executing it is put in the span the scheduler placed it in,
        if any, and the first task of each (prefix, span) that runs a coffea
        ``WorkItem`` is announced with a ``kind="prefix"`` record. On any later
        transition, once the task's function can no longer be running, its records
        are completed and sent. Never raises: failures are counted in
        :attr:`counters` (``hook_errors``).

        Parameters
        ----------
        key : Key
            The task's key.
        start, finish : str
            The states Dask names (``finish`` is the requested state).
        **kwargs
            Ignored (the worker passes none today).
        """
        try:
            if finish == "executing":
                self._outbox.started(key)
                ts = self._worker.state.tasks.get(key)
                if ts is not None:
                    _execute_in_run_span(ts)
                    if self._processor_tasks.first_of_its_prefix(ts):
                        self._announce(key, ts)
            else:
                self._outbox.ended(key)
        except Exception:
            self._count("hook_errors")
            logger.debug("roastcoffea worker transition hook failed", exc_info=True)

    def _announce(self, key: Any, ts: Any) -> None:
        """Send the prefix record of the first processor task of a (prefix, span)."""
        record = {
            "kind": "prefix",
            "v": RECORD_VERSION,
            "prefix": ts.prefix,
            "task_key": str(key),
            "worker": self._worker.address,
            "span": ts.span_id,
        }
        data = self._outbox.encode(record)
        if data is not None and self._outbox.queue([data], ts.span_id, []):
            self._count("prefix_records")

    def add_chunk(
        self, key: Any, record: dict[str, Any], source: Any = None, own_bytes: int = 0
    ) -> None:
        """Take a chunk record from :func:`roastcoffea.track_metrics`.

        Called in the task's thread. Fills ``task_key``, ``prefix``, ``worker``
        and ``span``; while the task executes, the record waits for
        :meth:`transition` to add the whole task's time (``task_start``,
        ``task_end``, ``task_duration``) and ``bytes_read_task``; otherwise it
        is sent at once with those None. Never raises (failures are counted, and
        a lost record goes in its place).

        Parameters
        ----------
        key : Key or None
            The running task's key (``distributed.worker.thread_state.key``).
        record : dict
            The chunk record; completed in place.
        source : uproot Source, optional
            The chunk's file source, read again when the task ends.
        own_bytes : int
            Bytes the instrumentation itself requested from ``source``; they
            are left out of ``bytes_read_task``.
        """
        try:
            ts = None if key is None else self._worker.state.tasks.get(key)
            record["task_key"] = None if key is None else str(key)
            record["prefix"] = None if ts is None else ts.prefix
            record["worker"] = self._worker.address
            record["span"] = None if ts is None else ts.span_id
            self._count("chunks")
            if ts is None or ts.state not in RUNNING_STATES:
                self._outbox.send([(record, None, own_bytes)], None, None)
                return
            self._outbox.hold(key, (record, source, own_bytes))
        except Exception as exc:
            self._count("hook_errors")
            logger.debug("roastcoffea add_chunk failed", exc_info=True)
            reason = f"the worker plugin failed ({type(exc).__name__})"
            self._outbox.send_lost("chunk", reason, record)

    def add_phases(
        self, key: Any, record: dict[str, Any], digests: PhaseDigests | None = None
    ) -> bool:
        """Take a task's phase record and its fine metrics (:mod:`.phases`).

        Called in the task's thread. Adds the task's identity; the record is sent
        from the event loop when the task ends (sending from the task's thread would
        wake the loop and hand it the GIL mid-task), and ``digests``
        (:func:`~roastcoffea.plugin.worker.phases.phase_digests`) go with the record, in
        the same message, so the scheduler counts the task's phases for every result
        it knows of, even when the worker dies before its next heartbeat; they are also
        summed for Dask's own span totals. Never raises.

        Returns
        -------
        bool
            Whether the plugin took ``digests`` (held with the running task's record,
            or sent at once with the record of a task not running); if not, the caller
            keeps them.
        """
        try:
            ts = None if key is None else self._worker.state.tasks.get(key)
            record.update(
                kind="phases",
                v=RECORD_VERSION,
                task_key=None if key is None else str(key),
                prefix=None if ts is None else ts.prefix,
                worker=self._worker.address,
                span=None if ts is None else ts.span_id,
            )
            where = (record["span"], record["prefix"] or key_split(record["task_key"] or ""))
            task_digests = None if digests is None else (where, digests)
            if ts is not None and ts.state in RUNNING_STATES:
                self._outbox.hold(key, (record, None, 0), task_digests)
            else:
                self._outbox.send([(record, None, 0)], None, None, task_digests)
                if task_digests is not None:
                    self._outbox.sum_from_the_loop(task_digests)
            return digests is not None
        except Exception as exc:
            self._count("hook_errors")
            logger.debug("roastcoffea add_phases failed", exc_info=True)
            reason = f"the worker plugin failed ({type(exc).__name__})"
            self._outbox.send_lost("phases", reason, record)
        return False

    def _count(self, name: str, n: int = 1) -> None:
        """Add ``n`` to a counter (task threads and the event loop both count)."""
        with self._lock:
            self.counters[name] += n

    def instrument_counters(self) -> dict[str, int]:
        """The instrumentation counters of this worker (a copy).

        Returns
        -------
        dict
            ``chunks`` records received, ``chunks_with_task`` completed with
            the task's time, ``pending_overflow``, ``prefix_records`` sent,
            ``announced_resets``, ``records_refused`` (plugin torn down),
            ``encode_errors``, ``hook_errors``, ``phase_records`` sent and
            ``records_lost`` (lost records sent in place of records that could
            not be sent).
        """
        with self._lock:
            return dict(self.counters)

    def queue_record(self, data: bytes, span: str | None = None) -> bool:
        """Send an opaque instrumentation record to the scheduler.

        It goes out at once on the worker's batched stream (op
        :data:`~roastcoffea.plugin.protocol.RECORDS_OP`); the scheduler keeps it
        with its span until the collector of that span takes it, or until the record
        store, at its byte cap, drops its oldest records (counted in
        ``records_dropped``).

        Parameters
        ----------
        data : bytes
            The record's bytes: stored as they are; a chunk record
            (:func:`~roastcoffea.records.encode_record`) also counts in the
            scheduler's running totals (the Prometheus export, the live stream).
        span : str, optional
            The Dask span of the task that made the record: a snapshot of a
            span carries the records of its subtree only.

        Returns
        -------
        bool
            True: the record was handed to the event stream.

        Raises
        ------
        TypeError
            If ``data`` is not bytes.
        RuntimeError
            If the plugin is not set up on a worker.
        """
        if not isinstance(data, bytes):
            raise TypeError(f"queue_record takes bytes, not {type(data).__name__}")
        if self._worker is None:
            raise RuntimeError("RoastWorkerPlugin is not set up on a worker")
        try:
            record = decode_record(data)
        except ValueError:  # opaque to the plugin: sent all the same
            record = {}
        chunks = [ChunkTotals.of_record(record)] if record.get("kind") == "chunk" else []
        return self._outbox.queue([data], span, chunks)

    def _payload(self, worker: Any) -> bytes:
        """The heartbeat metric: digest changes of the last ``window`` payloads."""
        if self.window is None:
            heartbeat = worker.periodic_callbacks.get("heartbeat")
            if heartbeat is not None:
                self._tracker.window = auto_window(self.interval, heartbeat.callback_time)
        # For Dask's own span totals (at its next heartbeat); the payload leaves
        # the phases out: they reached the scheduler with each task's records.
        self._phase_sums.file(worker.digest_metric)
        return self._tracker.payload(worker.digests_total, _changed_since_heartbeat(worker))

    def _full_state(self) -> bytes:
        """RPC handler ``roastcoffea_worker_state``: every digest."""
        self._phase_sums.file(self._worker.digest_metric)
        return self._tracker.full_payload(self._worker.digests_total)


def _execute_in_run_span(ts: Any) -> None:
    """Make the worker execute ``ts`` in the span the scheduler placed it in, if any.

    The span Dask executes a task in (``TaskState.span_id``, read when the task
    is handed to its thread, after this hook) files the task's fine metrics;
    the scheduler marks only tasks of a run that Dask grouped under another
    run's span, and only with a span it knows (:mod:`roastcoffea.plugin.scheduler.runs`).
    """
    annotations = ts.annotations
    run = annotations.get(PLACED_ANNOTATION) if annotations else None
    if isinstance(run, str):
        ts.span_id = run


def _changed_since_heartbeat(worker: Any) -> dict | None:
    """The span-keyed digests that changed since the last heartbeat, or None.

    Dask swaps ``Worker.digests_total_since_heartbeat`` out before the worker's
    metrics run, and hands the digests of the contexts with a span
    (``CONTEXTS_WITH_SPAN_ID``) to its spans extension, which keeps them until the
    heartbeat is sent: the keys there are those of ``digests_total`` that changed.
    Without them (no spans extension) the tracker reads every key.
    """
    spans = worker.extensions.get("spans")
    changed = getattr(spans, "digests_total_since_heartbeat", None)
    return changed if isinstance(changed, dict) else None
