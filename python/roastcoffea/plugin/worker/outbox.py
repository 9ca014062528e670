"""A worker's records on their way to the scheduler: held while their task runs, sent as it ends.

Chunk and phase records (:mod:`roastcoffea.records`) are made in a task's thread. While
the task runs they wait here; when it leaves "executing" the worker plugin's transition
hook completes its chunk records with the whole task's time and sends the task's records
and phase digests in one message, the op :data:`~roastcoffea.plugin.protocol.RECORDS_OP`
of the worker's batched stream to the scheduler, in the same event-loop tick that queues
the task-finished message: the scheduler holds the records of every result it knows of,
even when the worker dies right after. A record that cannot be sent is replaced by a lost
record, so the loss reaches the run that made it as a count with its reason. A closing
worker's full state goes the same way (:data:`~roastcoffea.plugin.protocol.FINAL_STATE_OP`).

The ops go out only when the scheduler handles them (``scheduler_ops``, set by the
``RoastPlugin`` that installed the worker plugin): an op the scheduler does not know ends
the worker's stream, and the scheduler removes the worker.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from distributed.worker import thread_state

from roastcoffea.phase_vocabulary import PhaseDigests
from roastcoffea.plugin.protocol import (
    FINAL_STATE_OP,
    RECORDS_OP,
    ChunkTotals,
    FinalState,
    PhaseEntry,
    RecordBatch,
)
from roastcoffea.records import encode_record, lost_record

logger = logging.getLogger(__name__)

#: Tasks whose records a worker holds while they execute; beyond, the oldest task's
#: records are sent at once without the task fields (counted as ``pending_overflow``).
MAX_PENDING_CHUNKS = 4096
#: Worker task states during which the task's function may still be running.
RUNNING_STATES = frozenset({"executing", "long-running", "cancelled", "resumed"})
#: The wall-clock fields of each record kind, moved to the scheduler's clock when sent.
CLOCK_FIELDS = {"chunk": ("t_start", "t_end", "timestamp"), "phases": ("t_start",)}

#: A record held with its file source and the bytes the instrumentation read from it.
Entry = tuple[dict[str, Any], Any, int]
#: A task's phase digests and the (span, prefix) they are filed under.
TaskDigests = tuple[tuple[Any, Any], PhaseDigests]


def to_scheduler_clock(record: dict[str, Any], delay: float) -> None:
    """Move a record's wall-clock times to the scheduler's clock.

    Dask keeps a task's ``startstops`` on the scheduler's clock: worker time plus the
    ``scheduler_delay`` it read when the task started (heartbeats change it while the
    task runs). A record's times move by the same amount, so chunks, phases, tasks and
    the worker series of a measurement share one clock.
    """
    for field in CLOCK_FIELDS.get(str(record.get("kind")), ()):
        if isinstance(record.get(field), float):
            record[field] += delay


def task_times(ts: Any) -> tuple[float, float] | None:
    """Start and stop of the task's last "compute" (scheduler clock), if any."""
    for entry in reversed(ts.startstops):
        if entry.get("action") == "compute":
            return float(entry["start"]), float(entry["stop"])
    return None


def _stamp_task_times(record: dict[str, Any], ts: Any) -> None:
    """Give a phase record its task's "compute" start and stop as Dask recorded them.

    The phase clock stops microseconds before Dask does; the task stream, and the
    wall split built from these records, use Dask's own pair. ``t_stop`` is None
    when the task's end was not observed.
    """
    times = None if ts is None else task_times(ts)
    if times is None:
        record["t_stop"] = None
    else:
        record["t_start"], record["t_stop"] = times


def stamped_delay(ts: Any, thread_start: float | None, submitted: float) -> float:
    """The scheduler_delay Dask stamped a finished task's startstops with.

    Its "compute" start minus the task thread's start on the worker clock
    (``thread_state.start_time``, set microseconds before Dask's own reading);
    when either is unknown, the delay read when the task began executing: a
    heartbeat can change the delay between that read and Dask's.
    """
    times = None if ts is None else task_times(ts)
    if times is None or thread_start is None:
        return submitted
    return times[0] - thread_start


class Outbox:
    """The records of one worker's tasks, held and sent.

    Parameters
    ----------
    worker : distributed.Worker
    count : callable
        Counts by name (the plugin's counters; task threads and the event loop count).
    sum_phases : callable
        Takes a task's ``(where, digests)`` for Dask's filing, on the event loop.
    scheduler_ops : bool
        Whether the scheduler handles roastcoffea's stream ops; without, nothing is sent
        (counted as ``records_refused``).
    """

    def __init__(
        self,
        worker: Any,
        count: Callable[..., None],
        sum_phases: Callable[[tuple[Any, Any], PhaseDigests], None],
        scheduler_ops: bool = False,
    ) -> None:
        self.worker: Any = worker
        self.scheduler_ops = scheduler_ops
        self._count = count
        self._sum_phases = sum_phases
        # Added from task threads, taken on the event loop: guarded by the lock.
        self._lock = threading.Lock()
        self._pending: dict[Any, list[Entry]] = {}
        self._thread_starts: dict[Any, float] = {}  # the worker-clock start of each task
        self._phase_digests: dict[Any, TaskDigests] = {}
        # Event loop only: the scheduler_delay each running task was submitted with.
        self._delays: dict[Any, float] = {}

    # ---- the task's life -----------------------------------------------------------

    def started(self, key: Any) -> None:
        """A task begins executing (event loop): note the delay Dask reads for it now.

        Worker.execute reads it in this loop tick, with no await before it hands the
        task to its thread.
        """
        self._delays[key] = self.worker.scheduler_delay

    def ended(self, key: Any) -> None:
        """A transition of ``key`` (event loop): once the task's function can no longer run,
        send its records completed with the task's end, and sum its phases for Dask."""
        if key not in self._delays:
            return
        ts = self.worker.state.tasks.get(key)
        if ts is not None and ts.state in RUNNING_STATES:
            return
        delay = self._delays.pop(key)
        with self._lock:
            entries = self._pending.pop(key, None)
            started = self._thread_starts.pop(key, None)
            digests = self._phase_digests.pop(key, None)
        if entries is None and digests is None:
            return  # most tasks hold nothing: no clock read, no message
        self.send(entries or (), ts, stamped_delay(ts, started, delay), digests)
        if digests is not None:
            self._sum_phases(*digests)

    def hold(self, key: Any, entry: Entry, digests: TaskDigests | None = None) -> None:
        """Keep a record of a running task (called in its thread) until it ends, with its
        phase ``digests``.

        At most :data:`MAX_PENDING_CHUNKS` tasks hold records; beyond, the oldest
        task's records are sent at once, without the task's end (counted), and its
        digests summed from the event loop.
        """
        evicted: list[Entry] = []
        evicted_digests: TaskDigests | None = None
        started = getattr(thread_state, "start_time", None)
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
        if evicted:  # an evicted task always held a record; its digests go with it
            self._count("pending_overflow", len(evicted))
            self.send(evicted, None, None, evicted_digests)
        if evicted_digests is not None:
            self.sum_from_the_loop(evicted_digests)

    def sum_from_the_loop(self, digests: TaskDigests) -> None:
        """Hand a task's digests to the sums from another thread, through the event loop."""
        if digests[0][0] is None:  # no span: Dask's spans would refuse the key
            return
        try:
            self.worker.loop.add_callback(self._sum_phases, *digests)
        except Exception:  # torn down meanwhile
            self._count("hook_errors")

    def send_all(self) -> None:
        """Send the records of the tasks still running, and sum their digests (teardown:
        the plugin will not see those tasks end)."""
        with self._lock:
            pending, self._pending = self._pending, {}
            digests, self._phase_digests = self._phase_digests, {}
            self._thread_starts.clear()
        self._delays.clear()
        for key, entries in pending.items():
            task_digests = digests.get(key)
            self.send(entries, None, None, task_digests)
            if task_digests is not None:
                self._sum_phases(*task_digests)

    # ---- sending -------------------------------------------------------------------

    def send(
        self,
        entries: Iterable[Entry],
        ts: Any,
        delay: float | None,
        digests: TaskDigests | None = None,
    ) -> None:
        """Send a task's records and phase ``digests`` in one message, its chunk records
        completed with ``ts``, every record on the scheduler's clock.

        ``ts`` is the worker's task state after the task left "executing", or None when
        that end was not observed; ``delay`` the scheduler_delay Dask stamped the task
        with, if known (else the current one). One message per task rather than per
        record: each costs the scheduler a handler call.
        """
        if delay is None:
            delay = getattr(self.worker, "scheduler_delay", 0.0)
        batch: list[bytes] = []
        chunks: list[ChunkTotals] = []
        phase_records = 0
        span = dataset = None
        for record, source, own_bytes in entries:
            to_scheduler_clock(record, delay)
            is_phases = record.get("kind") == "phases"
            if is_phases:
                _stamp_task_times(record, ts)
            else:
                self._complete(record, ts, source, own_bytes)
            data = self.encode(record)
            if data is None:
                continue
            batch.append(data)
            span = record.get("span")
            if is_phases:
                phase_records += 1
                dataset = record.get("dataset")
            else:
                chunks.append(ChunkTotals.of_record(record))
        phases = [] if digests is None else [_phase_entry(digests, dataset)]
        if (batch or phases) and self.queue(
            batch, span if isinstance(span, str) else None, chunks, phases
        ):
            self._count("phase_records", phase_records)

    def _complete(self, record: dict[str, Any], ts: Any, source: Any, own_bytes: int) -> None:
        """Fill the task fields of a chunk record (None, with the reason, when unknown)."""
        unavailable = record.setdefault("unavailable", {})
        times = None if ts is None else task_times(ts)
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
        _complete_requests(record, source if isinstance(total, int) else None)
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

    def encode(self, record: dict[str, Any]) -> bytes | None:
        """A record's bytes; None when it is not encodable (counted, and a lost record
        goes in its place)."""
        try:
            return encode_record(record)
        except (TypeError, ValueError) as exc:
            self._count("encode_errors")
            logger.debug("roastcoffea record not encodable", exc_info=True)
            field = _unencodable_field(record)
            where = f"field {field!r}" if field is not None else "a field"
            self.send_lost(
                record.get("kind"), f"{where} is not encodable ({type(exc).__name__})", record
            )
            return None

    def send_lost(self, kind: Any, reason: str, record: Any) -> None:
        """Send a lost record in place of ``record``, which could not be sent. Never raises."""
        try:
            span = record.get("span") if isinstance(record, dict) else None
            worker = self.worker.address if self.worker is not None else None
            lost = encode_record(lost_record(kind, reason, worker, span))
            if self.queue([lost], span if isinstance(span, str) else None, []):
                self._count("records_lost")
        except Exception:
            self._count("hook_errors")
            logger.debug("roastcoffea lost record not sent", exc_info=True)

    def queue(
        self,
        batch: list[bytes],
        span: str | None,
        chunks: list[ChunkTotals],
        phases: list[PhaseEntry] | None = None,
    ) -> bool:
        """Send encoded records to the scheduler as one
        :class:`~roastcoffea.plugin.protocol.RecordBatch`; False (counted) when it cannot
        go: the plugin torn down, or a scheduler without roastcoffea's ops.

        ``chunks`` holds the totals of the chunk records among them, so that the scheduler
        keeps its running totals without decoding a record; ``phases`` the task's phase
        digests, which the scheduler adds to its digest table.
        """
        message: RecordBatch = {"data": batch}
        if chunks:
            message["chunks"] = chunks
        if phases:
            message["phases"] = phases
        if span is not None:
            message["span"] = span
        return self._send(RECORDS_OP, message)

    def send_final_state(self, data: bytes) -> bool:
        """Send a closing worker's full payload (teardown); False (counted) when it cannot go."""
        state: FinalState = {"data": data}
        return self._send(FINAL_STATE_OP, state)

    def _send(self, op: str, message: Any) -> bool:
        """Append ``message`` as ``op`` to the worker's batched stream, from any thread.

        The stream is the event loop's: another thread hands the message to the loop, as
        ``Worker.log_event`` does. A message sent while the worker is not connected is
        dropped by Dask, as every stream message is.
        """
        worker = self.worker
        if worker is None or not self.scheduler_ops:
            self._count("records_refused")
            return False
        msg = {"op": op, **message}
        if worker.thread_id == threading.get_ident():
            worker.batched_send(msg)
        else:
            worker.loop.add_callback(worker.batched_send, msg)
        return True


def _complete_requests(record: dict[str, Any], source: Any) -> None:
    """The task's read requests and byte ranges from the source's counters, less the
    instrumentation's own (one vectored request of one range per basket header)."""
    own_requests, own_ranges = record.get("instrument_requests"), record.get("instrument_ranges")
    requests = getattr(source, "num_requests", None)
    ranges = getattr(source, "num_requested_chunks", None)
    if (
        isinstance(own_requests, int)
        and isinstance(own_ranges, int)
        and isinstance(requests, int)
        and isinstance(ranges, int)
    ):
        record["read_requests_task"] = requests - own_requests
        record["read_ranges_task"] = ranges - own_ranges
        return
    unavailable = record.setdefault("unavailable", {})
    for field in ("read_requests_task", "read_ranges_task"):
        record[field] = None
        unavailable[field] = "the file source's request counters were not reachable"


def _phase_entry(digests: TaskDigests, dataset: Any) -> PhaseEntry:
    """A task's phase digests as the record message carries them, with the dataset of its
    phase record (None without one)."""
    (span, prefix), (layout, values) = digests
    return PhaseEntry(span, prefix, layout, values, dataset if isinstance(dataset, str) else None)


def _unencodable_field(record: dict[str, Any]) -> str | None:
    """The first top-level key of ``record`` whose value does not encode, if any."""
    for key, value in record.items():
        try:
            encode_record({"v": value})
        except (TypeError, ValueError):
            return key if isinstance(key, str) and key.isascii() else None
    return None
