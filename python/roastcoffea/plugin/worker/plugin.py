"""RoastWorkerPlugin: the worker half, installed by :class:`RoastPlugin`.

It adds two things to the worker, both public and version-stable Dask
mechanisms (never a worker extension or a batched-stream op: those close the
worker when the scheduler does not know them):

* ``worker.metrics["roastcoffea"]``, a callable Dask runs at every heartbeat,
  whose bytes reach the scheduler as ``ws.metrics["roastcoffea"]``;
* ``worker.handlers["roastcoffea_worker_state"]``, an RPC handler that answers
  with the full cumulative state (used by flushes and after missed payloads).

Its ``transition`` hook also carries the instrumentation records
(:mod:`roastcoffea.records`): it completes the chunk records of
:func:`roastcoffea.track_metrics` with the whole task's time once the task
leaves "executing", and announces the task prefixes that run coffea work items.
Records go out at once with ``worker.log_event`` on the topic
:data:`RECORDS_TOPIC` (the public "log-event" message of the worker's batched
stream): a chunk's record is on that ordered stream before the message that
its task finished, so the scheduler holds the record of every result it
knows of, even when the worker dies right after.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Iterable
from operator import add
from typing import Any

from dask.utils import key_split
from distributed.diagnostics.plugin import WorkerPlugin
from distributed.spans import CONTEXTS_WITH_SPAN_ID
from distributed.worker import thread_state

from roastcoffea import _native
from roastcoffea.instrument import _phase_hooks
from roastcoffea.instrument import phases as phase_clock
from roastcoffea.phase_vocabulary import ACTIVITY_PREFIXES, PhaseDigests, digest_labels
from roastcoffea.plugin.protocol import (
    FINAL_STATE_TOPIC,
    PLACED_ANNOTATION,
    PLUGIN_NAME,
    RECORDS_TOPIC,
    WORKER_STATE_HANDLER,
)
from roastcoffea.plugin.worker.phases import digest_task_phases
from roastcoffea.records import (
    RECORD_VERSION,
    chunk_totals,
    decode_record,
    encode_record,
    lost_record,
)

try:  # the task spec classes of dask >= 2024.12; older dask has tuple tasks
    from dask._task_spec import DataNode, Task
except ImportError:  # pragma: no cover - depends on the installed dask
    DataNode = Task = None  # type: ignore[assignment,misc]

logger = logging.getLogger(__name__)

#: Chunk records a worker holds while their tasks execute; beyond it the
#: oldest is sent at once without the task fields (counted as ``pending_overflow``).
MAX_PENDING_CHUNKS = 4096
#: Task classes and (prefix, span) pairs remembered as classified / announced;
#: when either is full it is cleared (counted as ``announced_resets``), so a
#: pair may be announced again.
MAX_ANNOUNCED = 65536
#: Arguments looked at per nesting level when searching a task for a work item.
SCAN_WIDTH = 8
#: Nesting levels searched below the task itself.
SCAN_DEPTH = 3
#: Attributes that make an object a coffea ``WorkItem`` (duck-typed).
WORK_ITEM_FIELDS = ("dataset", "filename", "treename", "entrystart", "entrystop", "fileuuid")
#: Worker task states during which the task's function may still be running.
RUNNING_STATES = frozenset({"executing", "long-running", "cancelled", "resumed"})

#: A task's phase digests and the (span, prefix) they are filed under.
TaskDigests = tuple[tuple[Any, Any], PhaseDigests]


#: {type: whether its instances are work items}; types are few, but bounded anyway.
_WORK_ITEM_TYPES: dict[type, bool] = {}
MAX_WORK_ITEM_TYPES = 4096


def is_work_item(obj: Any) -> bool:
    """Whether ``obj`` looks like a coffea ``WorkItem`` (has all its fields).

    Decided once per type, on its first instance: the check runs for every
    argument of every task that starts on the worker.
    """
    kind = type(obj)
    known = _WORK_ITEM_TYPES.get(kind)
    if known is None:
        known = all(hasattr(obj, name) for name in WORK_ITEM_FIELDS)
        if len(_WORK_ITEM_TYPES) >= MAX_WORK_ITEM_TYPES:
            _WORK_ITEM_TYPES.clear()
        _WORK_ITEM_TYPES[kind] = known
    return known


def holds_work_item(obj: Any, depth: int = SCAN_DEPTH) -> bool:
    """Whether a task spec (or an argument of one) carries a coffea ``WorkItem``.

    Looks into ``Task`` arguments and keyword values, ``DataNode`` values and
    plain tuples and lists, at most :data:`SCAN_WIDTH` items per level and
    ``depth`` levels down, so the cost is bounded whatever the task holds.

    Parameters
    ----------
    obj : Any
        A worker task's ``run_spec``, or one of its arguments.
    depth : int
        Levels still allowed below ``obj``.

    Returns
    -------
    bool
    """
    if is_work_item(obj):
        return True
    if depth <= 0:
        return False
    if isinstance(obj, (tuple, list)):
        items = obj[:SCAN_WIDTH]
    elif DataNode is not None and isinstance(obj, DataNode):
        return holds_work_item(obj.value, depth - 1)
    elif Task is not None and isinstance(obj, Task):
        items = obj.args[:SCAN_WIDTH]
        if obj.kwargs:
            items = items + tuple(obj.kwargs.values())[:SCAN_WIDTH]
    else:
        return False
    return any(holds_work_item(item, depth - 1) for item in items)


def _task_times(ts: Any) -> tuple[float, float] | None:
    """Start and stop of the task's last "compute" (scheduler clock), if any."""
    for entry in reversed(ts.startstops):
        if entry.get("action") == "compute":
            return float(entry["start"]), float(entry["stop"])
    return None


def _stamped_delay(ts: Any, thread_start: float | None, submitted: float) -> float:
    """The scheduler_delay Dask stamped a finished task's startstops with.

    Its "compute" start minus the task thread's start on the worker clock
    (``thread_state.start_time``, set microseconds before Dask's own reading);
    when either is unknown, the delay read when the task began executing: a
    heartbeat can change the delay between that read and Dask's.
    """
    times = None if ts is None else _task_times(ts)
    if times is None or thread_start is None:
        return submitted
    return times[0] - thread_start


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
    """Sends the worker's fine performance metrics and queued records.

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
    """

    name = PLUGIN_NAME
    idempotent = True

    def __init__(
        self,
        interval: float = 1.0,
        window: int | None = None,
        phase_cpu_interval: float = phase_clock.CPU_INTERVAL,
        phases: bool = True,
    ) -> None:
        self.interval = float(interval)
        self.window = window
        self.phase_cpu_interval = float(phase_cpu_interval)
        self.phases = bool(phases)
        self._tracker: Any = None
        self._worker: Any = None
        # Chunk and phase records of executing tasks: {key: [(record, source, own_bytes)]}.
        # Added from task threads, completed on the event loop: guarded by the lock.
        self._pending: dict[Any, list[tuple[dict[str, Any], Any, int]]] = {}
        self._lock = threading.Lock()
        # Event loop only: task classes already searched for a work item, and
        # the (prefix, span) pairs whose prefix record was sent.
        self._classified: dict[tuple[str, str | None, type | None], bool] = {}
        self._announced: set[tuple[str, str | None]] = set()
        # Event loop only: the scheduler_delay each running task was submitted with.
        self._clock_delays: dict[Any, float] = {}
        # The worker-clock start of each running task that holds records (task
        # threads write it, the event loop reads it: guarded by the lock).
        self._thread_starts: dict[Any, float] = {}
        # The phase digests of each running task that holds its phase record, with
        # the task's (span, prefix), summed when it ends (guarded by the lock).
        self._phase_digests: dict[Any, TaskDigests] = {}
        # Event loop only: the ended tasks' phase digests summed per (span, prefix)
        # and layout, filed with Dask at the next heartbeat or state read.
        self._phase_sums: dict[tuple[Any, Any, Any], list[float]] = {}
        self.counters: dict[str, int] = dict.fromkeys(
            (
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
            ),
            0,
        )
        #: Why the phase hooks are not installed, or None when they are.
        self.phase_hooks_error: str | None = "not set up on a worker"

    def __getstate__(self) -> dict[str, Any]:
        return {
            "interval": self.interval,
            "window": self.window,
            "phase_cpu_interval": self.phase_cpu_interval,
            "phases": self.phases,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        RoastWorkerPlugin.__init__(self, **state)

    def setup(self, worker: Any) -> None:
        """Install the heartbeat metric and the state handler on ``worker``."""
        self._worker = worker
        self._tracker = _native.DigestTracker(
            worker.id,
            self.window or 4,
            followed=CONTEXTS_WITH_SPAN_ID,
            sent_apart=ACTIVITY_PREFIXES,
        )
        worker.metrics[PLUGIN_NAME] = self._payload
        worker.handlers[WORKER_STATE_HANDLER] = self._full_state
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
        """Send the full state a last time, then remove what :meth:`setup` installed.

        Dask tears plugins down before it closes the worker's stream to the
        scheduler, so the digests of tasks that finished after the last
        heartbeat still arrive (topic :data:`FINAL_STATE_TOPIC`).
        """
        if self._tracker is not None:
            try:
                self._release_pending()
                self._file_phase_sums()
                data = self._tracker.full_payload(worker.digests_total)
                worker.log_event(FINAL_STATE_TOPIC, {"worker": worker.address, "data": data})
            except Exception:
                self._count("hook_errors")
                logger.debug("roastcoffea final state not sent", exc_info=True)
        if worker.metrics.get(PLUGIN_NAME) == self._payload:
            del worker.metrics[PLUGIN_NAME]
        if worker.handlers.get(WORKER_STATE_HANDLER) == self._full_state:
            del worker.handlers[WORKER_STATE_HANDLER]
        if self.phase_hooks_error is None:
            _phase_hooks.uninstall()
            if not _phase_hooks.installed():
                phase_clock.set_sink(None)
            self.phase_hooks_error = "torn down"
        with self._lock:
            self._pending.clear()
            self._thread_starts.clear()
            self._phase_digests.clear()
        self._phase_sums.clear()
        self._classified.clear()
        self._announced.clear()
        self._clock_delays.clear()
        self._tracker = None
        self._worker = None

    def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
        """Worker hook: announce processor prefixes, complete chunk records.

        On a transition to "executing" of a task whose (prefix, span) was not
        announced yet, the task's spec is searched for a coffea ``WorkItem``
        (:func:`holds_work_item`); if one is found a ``kind="prefix"`` record is
        queued once. On any later transition of a task with pending chunk
        records, once the task's function can no longer be running, the records
        get the task fields and are queued. Never raises: failures are counted
        in :attr:`counters` (``hook_errors``).

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
                # Worker.execute reads the delay in this loop tick, with no await
                # before it hands the task to its thread.
                self._clock_delays[key] = self._worker.scheduler_delay
                ts = self._worker.state.tasks.get(key)
                if ts is not None:
                    _execute_in_run_span(ts)
                    self._announce(key, ts)
            elif key in self._clock_delays:
                ts = self._worker.state.tasks.get(key)
                if ts is None or ts.state not in RUNNING_STATES:
                    delay = self._clock_delays.pop(key)
                    with self._lock:
                        entries = self._pending.pop(key, ())
                        started = self._thread_starts.pop(key, None)
                        digests = self._phase_digests.pop(key, None)
                    self._release(entries, ts, _stamped_delay(ts, started, delay), digests)
                    if digests is not None:
                        self._sum_phases(*digests)
        except Exception:
            self._count("hook_errors")
            logger.debug("roastcoffea worker transition hook failed", exc_info=True)

    def _release_pending(self) -> None:
        """Send the records of tasks still running, and sum their phase digests.

        At teardown: the plugin will not see those tasks end, and their records
        would otherwise be lost with it.
        """
        with self._lock:
            pending, self._pending = self._pending, {}
            digests, self._phase_digests = self._phase_digests, {}
            self._thread_starts.clear()
        for key, entries in pending.items():
            task_digests = digests.get(key)
            self._release(entries, None, None, task_digests)
            if task_digests is not None:
                self._sum_phases(*task_digests)

    def _announce(self, key: Any, ts: Any) -> None:
        """Queue a prefix record if ``key``'s task runs a coffea work item.

        Tasks are classified by (prefix, span, type of the first argument) and
        each class is searched once: coffea's preprocessing and processing
        tasks share the prefix "automatic_retries" when not compressed, but
        not that type (``FileMeta`` vs a ``WorkItem`` or a tuple holding one).
        So a task costs one dict lookup once its class is known.
        """
        spec = ts.run_spec
        args = getattr(spec, "args", None)
        shape = (ts.prefix, ts.span_id, type(args[0]) if args else None)
        if shape in self._classified:
            return
        if len(self._classified) >= MAX_ANNOUNCED:
            self._classified.clear()
            self._count("announced_resets")
        found = holds_work_item(spec)
        self._classified[shape] = found
        marker = (ts.prefix, ts.span_id)
        if not found or marker in self._announced:
            return
        if len(self._announced) >= MAX_ANNOUNCED:
            self._announced.clear()
            self._count("announced_resets")
        self._announced.add(marker)
        record = {
            "kind": "prefix",
            "v": RECORD_VERSION,
            "prefix": ts.prefix,
            "task_key": str(key),
            "worker": self._worker.address,
            "span": ts.span_id,
        }
        data = self._encode(record)
        if data is not None and self._queue([data], ts.span_id, []):
            self._count("prefix_records")

    def add_chunk(
        self, key: Any, record: dict[str, Any], source: Any = None, own_bytes: int = 0
    ) -> None:
        """Take a chunk record from :func:`roastcoffea.track_metrics`.

        Called in the task's thread. Fills ``task_key``, ``prefix``, ``worker``
        and ``span``; while the task executes, the record waits for
        :meth:`transition` to add the whole task's time (``task_start``,
        ``task_end``, ``task_duration``) and ``bytes_read_task``; otherwise it
        is queued at once with those None. At most :data:`MAX_PENDING_CHUNKS`
        records wait. Never raises (failures are counted).

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
                self._release([(record, None, own_bytes)], None, None)
                return
            self._hold(key, (record, source, own_bytes))
        except Exception as exc:
            self._count("hook_errors")
            logger.debug("roastcoffea add_chunk failed", exc_info=True)
            self._send_lost("chunk", f"the worker plugin failed ({type(exc).__name__})", record)

    def add_phases(
        self, key: Any, record: dict[str, Any], digests: PhaseDigests | None = None
    ) -> bool:
        """Take a task's phase record and its fine metrics (:mod:`.phases`).

        Called in the task's thread. Adds the task's identity and moves
        ``t_start`` to the scheduler clock, as chunk records are; the record
        is sent from the event loop when the task ends (sending from the
        task's thread would wake the loop and hand it the GIL mid-task), and
        ``digests`` (:func:`~roastcoffea.plugin.worker.phases.phase_digests`) go with the
        record, in the same message, so the scheduler counts the task's phases
        for every result it knows of, even when the worker dies before its next
        heartbeat; they are also added to the sums the plugin files with
        ``Worker.digest_metric`` under the task's ``("execute", span, prefix)``
        at the next heartbeat, for Dask's own span totals. Never raises.

        Returns
        -------
        bool
            Whether the plugin took ``digests`` (held with the running task's
            record, or sent at once with the record of a task not running); if
            not, the caller keeps them.
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
            if isinstance(record.get("t_start"), float):
                record["t_start"] += getattr(self._worker, "scheduler_delay", 0.0)
            where = (record["span"], record["prefix"] or key_split(record["task_key"] or ""))
            task_digests = None if digests is None else (where, digests)
            if ts is not None and ts.state in RUNNING_STATES:
                # Sent and filed from the event loop at the task's end.
                self._hold(key, (record, None, 0), task_digests)
                return digests is not None
            self._release([(record, None, 0)], None, None, task_digests)
            if task_digests is not None and where[0] is not None:
                self._worker.loop.add_callback(self._sum_phases, *task_digests)
            return digests is not None
        except Exception as exc:
            self._count("hook_errors")
            logger.debug("roastcoffea add_phases failed", exc_info=True)
            self._send_lost("phases", f"the worker plugin failed ({type(exc).__name__})", record)
        return False

    def _hold(
        self,
        key: Any,
        entry: tuple[dict[str, Any], Any, int],
        digests: TaskDigests | None = None,
    ) -> None:
        """Keep a record of a running task for :meth:`transition` to send when it ends,
        and its phase ``digests`` with the (span, prefix) to file them under.

        At most :data:`MAX_PENDING_CHUNKS` tasks hold records; beyond, the oldest
        task's records are sent at once, without the task's end (counted), and its
        digests summed from the event loop.
        """
        evicted: list[tuple[dict[str, Any], Any, int]] = []
        evicted_digests: TaskDigests | None = None
        started = getattr(thread_state, "start_time", None)  # called in the task's thread
        with self._lock:
            if isinstance(started, float):
                self._thread_starts[key] = started
            self._pending.setdefault(key, []).append(entry)
            if digests is not None:
                self._phase_digests[key] = digests
            if len(self._pending) > MAX_PENDING_CHUNKS:
                oldest = next(iter(self._pending))
                evicted = self._pending.pop(oldest)
                evicted_digests = self._phase_digests.pop(oldest, None)
        for _ in evicted:
            self._count("pending_overflow")
        self._release(evicted, None, None, evicted_digests)
        if evicted_digests is not None:
            try:
                self._worker.loop.add_callback(self._sum_phases, *evicted_digests)
            except Exception:  # torn down meanwhile: this task's digests are held all the same
                self._count("hook_errors")

    def _sum_phases(self, where: tuple[Any, Any], digests: PhaseDigests) -> None:
        """Add an ended task's phase digests to the sums of its (span, prefix) and layout.

        On the event loop. Dask's ``digest_metric`` costs a few microseconds per
        call and a task has about 25 digests: summed here, value by value, each
        is filed once per heartbeat (:meth:`_file_phase_sums`). Never raises (it
        also runs as a loop callback, after a teardown perhaps).
        """
        try:
            layout, values = digests
            key = (*where, layout)
            sums = self._phase_sums.get(key)
            self._phase_sums[key] = values if sums is None else list(map(add, sums, values))
        except Exception:
            self._count("hook_errors")
            logger.debug("roastcoffea phase digests not summed", exc_info=True)

    def _file_phase_sums(self) -> None:
        """File the summed phase digests with ``Worker.digest_metric``, for Dask.

        On the event loop, before each heartbeat payload, full state and
        teardown: Dask's own span totals take them at its next heartbeat. The
        keys are ``("execute", span, prefix, activity, unit)``, those under which
        Dask files what a task sends through its context meter. Never raises.
        """
        sums, self._phase_sums = self._phase_sums, {}
        try:
            digest = self._worker.digest_metric
            for (span, prefix, layout), values in sums.items():
                for (activity, unit), value in zip(digest_labels(layout), values, strict=True):
                    digest(("execute", span, prefix, activity, unit), value)
        except Exception:
            self._count("hook_errors")
            logger.debug("roastcoffea phase digests not filed", exc_info=True)

    def _release(
        self,
        entries: Iterable[tuple[dict[str, Any], Any, int]],
        ts: Any,
        delay: float | None,
        digests: TaskDigests | None = None,
    ) -> None:
        """Send a task's held records and phase ``digests`` in one message, its chunk
        records completed with ``ts``.

        One message per task rather than per record: each is a ``log-event`` the
        scheduler stores, publishes and hands to every plugin.
        """
        batch: list[bytes] = []
        chunks: list[list[Any]] = []
        phase_records = 0
        span = None
        for record, source, own_bytes in entries:
            is_phases = record.get("kind") == "phases"
            if not is_phases:
                self._complete(record, ts, source, own_bytes, delay)
            data = self._encode(record)
            if data is None:
                continue
            batch.append(data)
            span = record.get("span")
            if is_phases:
                phase_records += 1
            else:
                chunks.append(chunk_totals(record))
        phases = [] if digests is None else [_phases_entry(digests)]
        if (batch or phases) and self._queue(
            batch, span if isinstance(span, str) else None, chunks, phases
        ):
            self._count("phase_records", phase_records)

    def _complete(
        self, record: dict[str, Any], ts: Any, source: Any, own_bytes: int, delay: float | None
    ) -> None:
        """Fill the task fields of a chunk record.

        ``ts`` is the worker's task state after the task left "executing", or
        None when that end was not observed (the fields are then None).
        ``delay`` is the scheduler_delay Dask stamped the task with, if known.
        """
        unavailable = record.setdefault("unavailable", {})
        # Dask keeps a task's startstops on the scheduler's clock: worker time plus
        # the scheduler_delay it read when the task started (heartbeats change it
        # while the task runs). The record's wall-clock times move by the same amount, so
        # chunks, tasks and the worker series of a measurement share one clock.
        if delay is None:
            delay = getattr(self._worker, "scheduler_delay", 0.0)
        for field in ("t_start", "t_end", "timestamp"):
            if isinstance(record.get(field), float):
                record[field] += delay
        times = None if ts is None else _task_times(ts)
        if times is None:
            reason = (
                "the task's end was not observed on the worker"
                if ts is None
                else "the worker recorded no compute time for the task"
            )
            for field in ("task_start", "task_end", "task_duration"):
                record[field] = None
                unavailable[field] = reason
        else:
            record["task_start"], record["task_end"] = times
            record["task_duration"] = times[1] - times[0]
            self._count("chunks_with_task")
        total = None if ts is None else getattr(source, "num_requested_bytes", None)
        if isinstance(total, int):
            record["bytes_read_task"] = total - own_bytes
        else:
            record["bytes_read_task"] = None
            if ts is None:
                unavailable["bytes_read_task"] = "the task's end was not observed on the worker"
            elif source is None:
                unavailable["bytes_read_task"] = "the chunk's file source was not reachable"
            else:
                unavailable["bytes_read_task"] = "the file source has no num_requested_bytes"

    def _encode(self, record: dict[str, Any]) -> bytes | None:
        """A record's bytes; None when it is not encodable (counted, and a lost
        record goes in its place)."""
        try:
            return encode_record(record)
        except (TypeError, ValueError) as exc:
            self._count("encode_errors")
            logger.debug("roastcoffea record not encodable", exc_info=True)
            field = _unencodable_field(record)
            where = f"field {field!r}" if field is not None else "a field"
            self._send_lost(
                record.get("kind"), f"{where} is not encodable ({type(exc).__name__})", record
            )
            return None

    def _send_lost(self, kind: Any, reason: str, record: Any) -> None:
        """Send a lost record in place of ``record``, which could not be sent. Never raises."""
        try:
            span = record.get("span") if isinstance(record, dict) else None
            worker = self._worker.address if self._worker is not None else None
            lost = encode_record(lost_record(kind, reason, worker, span))
            if self._queue([lost], span if isinstance(span, str) else None, []):
                self._count("records_lost")
        except Exception:
            self._count("hook_errors")
            logger.debug("roastcoffea lost record not sent", exc_info=True)

    def _queue(
        self,
        batch: list[bytes],
        span: str | None,
        chunks: list[list[Any]],
        phases: list[list[Any]] | None = None,
    ) -> bool:
        """Send encoded records to the scheduler; False (counted) when the plugin is torn down.

        ``Worker.log_event`` appends to the batched stream at once on the event
        loop (where task ends are seen) and through the loop from other threads.
        ``chunks`` holds :func:`~roastcoffea.records.chunk_totals` of the chunk
        records among them, so that the scheduler keeps its running totals
        without decoding a record; ``phases`` the task's phase digests
        (:func:`_phases_entry`), which the scheduler adds to its digest table.
        """
        if self._worker is None:
            self._count("records_refused")
            return False
        message: dict[str, Any] = {"worker": self._worker.address, "data": batch}
        if chunks:
            message["chunks"] = chunks
        if phases:
            message["phases"] = phases
        if span is not None:
            message["span"] = span
        self._worker.log_event(RECORDS_TOPIC, message)
        return True

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

        It goes out at once on the worker's event stream (topic
        :data:`RECORDS_TOPIC`); the scheduler keeps it with its span until
        the collector of that span takes it, or until the record store, at
        its byte cap, drops its oldest records (counted in
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
        chunks = [chunk_totals(record)] if record.get("kind") == "chunk" else []
        return self._queue([data], span, chunks)

    def _payload(self, worker: Any) -> bytes:
        """The heartbeat metric: digest changes of the last ``window`` payloads."""
        if self.window is None:
            heartbeat = worker.periodic_callbacks.get("heartbeat")
            if heartbeat is not None:
                self._tracker.window = auto_window(self.interval, heartbeat.callback_time)
        # For Dask's own span totals (at its next heartbeat); the payload leaves
        # the phases out: they reached the scheduler with each task's records.
        self._file_phase_sums()
        return self._tracker.payload(worker.digests_total, _changed_since_heartbeat(worker))

    def _full_state(self) -> bytes:
        """RPC handler ``roastcoffea_worker_state``: every digest and queued record."""
        self._file_phase_sums()
        return self._tracker.full_payload(self._worker.digests_total)


def _phases_entry(digests: TaskDigests) -> list[Any]:
    """A task's phase digests as the record message carries them:
    ``[span, prefix, output measured, [codec, ...], [value, ...]]``."""
    (span, prefix), ((output_measured, codecs), values) = digests
    return [span, prefix, output_measured, list(codecs), values]


def _unencodable_field(record: dict[str, Any]) -> str | None:
    """The first top-level key of ``record`` whose value does not encode, if any."""
    for key, value in record.items():
        try:
            encode_record({"v": value})
        except (TypeError, ValueError):
            return key if isinstance(key, str) and key.isascii() else None
    return None


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
