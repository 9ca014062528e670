"""What workers send on their batched streams, taken in: a task's records, a closing worker's state.

The plugin's stream handlers (:data:`~roastcoffea.plugin.protocol.RECORDS_OP`,
:data:`~roastcoffea.plugin.protocol.FINAL_STATE_OP`) run on the scheduler's event loop
for every such message, with the sending worker's address from the stream itself. An
exception in a stream handler would end the worker's stream and remove the worker, so
:class:`RecordIntake` takes any keyword arguments and never raises: a message that
is not a worker's (a client's stream shares the handlers) or is malformed is counted in
the aggregator's errors under the part that failed, and the rest of it is kept.

One :class:`~roastcoffea.plugin.protocol.RecordBatch` per task end: its records'
bytes go to the aggregator's record store with their span, collected or not
(:mod:`~roastcoffea.plugin.scheduler.collectors`), its phase digests to the
digest table (``Aggregator.add_digests``), and both its chunk totals and its phases'
dataset split to the :class:`~roastcoffea.plugin.scheduler.totals.RunningTotals`. The
scheduler decodes no record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from distributed.metrics import time

from roastcoffea.phase_vocabulary import digest_labels
from roastcoffea.plugin.protocol import ChunkTotals, PhaseEntry
from roastcoffea.plugin.scheduler.totals import RunningTotals


def ignore(**msg: Any) -> None:
    """A stream handler that drops its message: what stays of the plugin's handlers once the
    plugin is removed, for the messages still on their way."""


class RecordIntake:
    """Hands the messages of the workers' event streams to the aggregator and the totals.

    Parameters
    ----------
    aggregator : roastcoffea._native.Aggregator
    totals : RunningTotals
    count_error : callable
        Counts a malformed part by name (the plugin's error table).
    collects : callable
        Whether a live collector will collect the records of a span
        (:meth:`~roastcoffea.plugin.scheduler.collectors.Collectors.collects`).
    """

    def __init__(
        self,
        aggregator: Any,
        totals: RunningTotals,
        count_error: Callable[[str], None],
        collects: Callable[[str | None], bool],
    ) -> None:
        self.aggregator = aggregator
        self.totals = totals
        self._count_error = count_error
        self._collects = collects

    def records(self, **msg: Any) -> None:
        """Stream handler of :data:`~roastcoffea.plugin.protocol.RECORDS_OP`: store a task's
        records with their span; add its phases and chunks. Never raises."""
        try:
            worker = self._sender(msg)
            if worker is not None:
                self._records(worker, msg)
        except Exception:
            self._count_error("records")

    def final_state(self, **msg: Any) -> None:
        """Stream handler of :data:`~roastcoffea.plugin.protocol.FINAL_STATE_OP`: apply a
        closing worker's full payload, what its last heartbeat missed. Never raises."""
        try:
            worker = self._sender(msg)
            data = msg.get("data")
            if worker is None:
                return
            if not isinstance(data, bytes):
                self._count_error("final_state_not_bytes")
                return
            self.aggregator.ingest(worker, data, time())
        except Exception:
            self._count_error("final_state")

    def _sender(self, msg: dict[str, Any]) -> str | None:
        """The worker whose stream carried ``msg``; None (counted) for a client's stream."""
        worker = msg.get("worker")
        if "client" in msg or not isinstance(worker, str):
            self._count_error("stream_op_not_from_a_worker")
            return None
        return worker

    def _records(self, worker: str, msg: dict[str, Any]) -> None:
        span = msg.get("span")
        span = span if isinstance(span, str) else None
        data = msg.get("data", ())
        now, collected = time(), self._collects(span)
        for item in data if isinstance(data, (list, tuple)) else [data]:
            if isinstance(item, bytes):
                self.aggregator.add_record(worker, item, now, span, collected)
            else:
                self._count_error("record_not_bytes")
        for phases in msg.get("phases", ()):
            self._phases(worker, phases)
        for totals in msg.get("chunks", ()):
            try:
                chunk = ChunkTotals.from_wire(totals)
            except ValueError:
                self._count_error("chunk_totals")
                continue
            self.totals.add_chunk(span, chunk)

    def _phases(self, worker: str, wire: object) -> None:
        try:
            entry = PhaseEntry.from_wire(wire)
            labels = digest_labels(entry.layout)
            self.aggregator.add_digests(
                worker, "execute", entry.span, entry.prefix, labels, entry.values
            )
        except (TypeError, ValueError):
            self._count_error("phase_digests")
            return
        self.totals.add_phases(entry.span, entry.dataset, labels, entry.values)
