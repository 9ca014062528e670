"""What the scheduler, worker and client halves of the plugin say to each other.

A leaf module: the names of the plugin, its handlers, event topics and task
annotations, and the shapes of the messages that cross between the halves, each
defined once and used by both ends. It imports nothing of roastcoffea.

Messages travel as msgpack (Dask's batched stream and RPCs): a ``NamedTuple``
goes as a list and comes back as a tuple (or as the object itself between
in-process servers), so each receiving end reads one with ``from_wire``, which
checks what a worker or client sent before anything is counted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple, TypedDict, TypeGuard

#: Name of both plugins, and of the worker's metric in ``worker.metrics`` /
#: ``ws.metrics`` that carries its heartbeat payload.
PLUGIN_NAME = "roastcoffea"
#: The worker's metric carrying its node's view (:class:`NodeReading`).
NODE_METRIC = "roastcoffea-node"

#: Scheduler RPC handlers (:class:`~roastcoffea.plugin.RoastPlugin`).
OPEN_HANDLER = "roastcoffea_open"
FINISH_HANDLER = "roastcoffea_finish"
RECORDS_HANDLER = "roastcoffea_records"
SNAPSHOT_HANDLER = "roastcoffea_snapshot"
FLUSH_HANDLER = "roastcoffea_flush"
STOP_HANDLER = "roastcoffea_stop"
#: Worker RPC handler that answers with the worker's full payload.
WORKER_STATE_HANDLER = "roastcoffea_worker_state"

#: Ops of a worker's batched stream that the scheduler plugin handles
#: (``Scheduler.stream_handlers``): a task's records and phase digests, and a closing
#: worker's full state. Their handlers stay, as no-ops, after the plugin is removed: a
#: stream op the scheduler does not know ends the worker's stream, and the worker with it.
RECORDS_OP = "roastcoffea-records"
FINAL_STATE_OP = "roastcoffea-final-state"
#: Event topic of the live stream the scheduler publishes while a client listens.
LIVE_TOPIC = PLUGIN_NAME

#: Task annotation a collector puts on every task of its block: its span id
#: (roastcoffea.plugin.scheduler.runs).
RUN_ANNOTATION = "roastcoffea-run"
#: Key prefix of the task that declares a collector's run (it never runs): the scheduler
#: learns from it that the run's span will be collected, and by which client.
DECLARATION_PREFIX = "roastcoffea-run"
#: Task annotation the scheduler puts on a task it placed in its run's span: that span id.
PLACED_ANNOTATION = "roastcoffea-placed"

#: Key of the answer of a worker that cannot load roastcoffea.
UNMONITORED = "unmonitored"


# ---- worker -> scheduler: a task's records ---------------------------------------------


class ChunkTotals(NamedTuple):
    """What one chunk record adds to the scheduler's running totals.

    A worker sends it beside the record's bytes, so that the running totals (the
    live stream, the Prometheus export, the dashboard) never decode a record. A
    value the record lacks adds nothing (0 events or bytes, duration None) rather
    than making a total unknown.
    """

    dataset: str | None
    events: int
    bytes_read: int  # the whole task's when known, else process()'s
    duration: float | None  # seconds of process()

    @classmethod
    def of_record(cls, record: dict[str, Any]) -> ChunkTotals:
        """The totals of a chunk record (worker side)."""
        nbytes = record.get("bytes_read_task")
        if nbytes is None:
            nbytes = record.get("bytes_read")
        dataset, duration = record.get("dataset"), record.get("duration")
        return cls(
            dataset if isinstance(dataset, str) else None,
            _count_or_zero(record.get("num_events")),
            _count_or_zero(nbytes),
            float(duration) if _is_duration(duration) else None,
        )

    @classmethod
    def from_wire(cls, entry: object) -> ChunkTotals:
        """Check an entry a worker sent (scheduler side).

        Raises
        ------
        ValueError
            If ``entry`` is not ``[str | None, int >= 0, int >= 0, float >= 0 | None]``.
        """
        if not isinstance(entry, (list, tuple)) or len(entry) != 4:
            raise ValueError(f"chunk totals are a list of 4, not {entry!r:.100}")
        dataset, events, nbytes, duration = entry
        if not (dataset is None or isinstance(dataset, str)):
            raise ValueError(f"chunk totals: dataset {dataset!r:.100} is not str or None")
        for name, value in (("events", events), ("bytes", nbytes)):
            if not _is_count(value):
                raise ValueError(f"chunk totals: {name} {value!r:.100} is not an int >= 0")
        if not (duration is None or (isinstance(duration, float) and _is_duration(duration))):
            raise ValueError(f"chunk totals: duration {duration!r:.100} is not a float >= 0")
        return cls(dataset, events, nbytes, duration)


#: Where a task's digest values go: whether its output was measured, its codecs, its
#: helper threads' phases, whether its run-queue delay was measured
#: (:data:`roastcoffea.phase_vocabulary.Layout`).
Layout = tuple[bool, tuple[str, ...], tuple[str, ...], bool]


class PhaseEntry(NamedTuple):
    """One task's phase digests: values in the order of the labels of its layout.

    :func:`roastcoffea.phase_vocabulary.digest_labels` turns the layout into the
    ``(activity, unit)`` label of each value, kept once per layout on both ends.
    """

    span: str
    prefix: str
    layout: Layout
    values: Sequence[float]
    dataset: str | None  # the work item's, for the per-dataset views

    @classmethod
    def from_wire(cls, entry: object) -> PhaseEntry:
        """Check an entry a worker sent (scheduler side).

        Raises
        ------
        ValueError
            If ``entry`` is not ``[span, prefix, [output measured, [codec, ...],
            [helper phase, ...], run-queue delay measured], [value, ...], dataset]``
            (the values' count is the aggregator's to check against the labels).
        """
        if not isinstance(entry, (list, tuple)) or len(entry) != 5:
            raise ValueError(f"a phase entry is a list of 5, not {entry!r:.100}")
        span, prefix, layout, values, dataset = entry
        if not (isinstance(span, str) and isinstance(prefix, str)):
            raise ValueError("a phase entry's span and prefix are str")
        if not (isinstance(layout, (list, tuple)) and len(layout) == 4):
            raise ValueError("a phase entry's layout is a list of 4")
        output_measured, codecs, helpers, cpu_wait = layout
        for name, names in (("codecs", codecs), ("helpers", helpers)):
            if not (isinstance(names, (list, tuple)) and all(isinstance(n, str) for n in names)):
                raise ValueError(f"a phase entry's {name} are a list of str")
        if not isinstance(values, (list, tuple)):
            raise ValueError("a phase entry's values are a list of numbers")
        checked = (bool(output_measured), tuple(codecs), tuple(helpers), bool(cpu_wait))
        return cls(span, prefix, checked, values, dataset if isinstance(dataset, str) else None)


class RecordBatch(TypedDict, total=False):
    """What a worker sends with :data:`RECORDS_OP` when a task ends: its records' bytes
    (the scheduler never decodes them), their span, and what they add to the running
    totals and to the digest table. The sender is the stream's worker, never a field."""

    data: list[bytes]
    span: str
    chunks: list[ChunkTotals]
    phases: list[PhaseEntry]


class NodeReading(TypedDict):
    """The node a worker runs on, at its heartbeat (``ws.metrics[NODE_METRIC]``): its online
    cores, runnable threads, 1-minute load and the percent of its CPU time stolen by its
    host since the previous heartbeat; None for what the node does not tell."""

    cores: float | None
    runnable: float | None
    load: float | None
    steal_percent: float | None


class FinalState(TypedDict):
    """What a closing worker sends with :data:`FINAL_STATE_OP`: its full payload."""

    data: bytes


# ---- client <-> scheduler: a collector's entry and exit --------------------------------


class OpenReply(TypedDict):
    """What :data:`OPEN_HANDLER` answers: the running plugin's settings and clock."""

    interval: float
    live: bool
    phases: bool
    time: float


class FlushReply(TypedDict):
    """What :data:`FLUSH_HANDLER` answers (docs/architecture.md, "Scheduler RPC handlers")."""

    workers: int
    errors: dict[str, str]
    unmonitored: dict[str, str]
    departures: list[dict[str, Any]]


class RecordsReply(TypedDict):
    """What :data:`RECORDS_HANDLER` answers: the run's records not yet acknowledged (as
    the snapshot lists them), the newest one's number to acknowledge, and whether the run
    streams at all (False for a run inside another collector's: its records wait for the
    exits)."""

    records: list[dict[str, Any]]
    last: int
    streamed: bool


class FinishReply(TypedDict):
    """What :data:`FINISH_HANDLER` answers: the window's end (scheduler clock), the flush,
    its seconds, the snapshot's bytes, and the run's records the store dropped."""

    t_to: float
    flush: FlushReply
    flush_seconds: float
    snapshot: bytes
    records_dropped: int


def _is_count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _count_or_zero(value: object) -> int:
    return value if _is_count(value) else 0


def _is_duration(value: object) -> TypeGuard[float]:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )
