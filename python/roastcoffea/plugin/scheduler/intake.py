"""What workers send on their event streams, taken in: a task's records, a closing worker's state.

One :class:`~roastcoffea.plugin.protocol.RecordBatch` per task end: its records'
bytes go to the aggregator's record store with their span, its phase digests to the
digest table (``Aggregator.add_digests``), and both its chunk totals and its phases'
dataset split to the :class:`~roastcoffea.plugin.scheduler.totals.RunningTotals`. The
scheduler decodes no record. Whatever is malformed is counted in the aggregator's
errors under the part that failed, and the rest of the message is kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from distributed.metrics import time

from roastcoffea.phase_vocabulary import digest_labels
from roastcoffea.plugin.protocol import ChunkTotals, FinalState, PhaseEntry, RecordBatch
from roastcoffea.plugin.scheduler.totals import RunningTotals


class RecordIntake:
    """Hands the messages of the workers' event streams to the aggregator and the totals.

    Parameters
    ----------
    aggregator : roastcoffea._native.Aggregator
    totals : RunningTotals
    count_error : callable
        Counts a malformed part by name (the plugin's error table).
    """

    def __init__(
        self, aggregator: Any, totals: RunningTotals, count_error: Callable[[str], None]
    ) -> None:
        self.aggregator = aggregator
        self.totals = totals
        self._count_error = count_error

    def records(self, msg: RecordBatch) -> None:
        """Store a task's records with their span; add its phases and chunks."""
        worker, span = msg["worker"], msg.get("span")
        span = span if isinstance(span, str) else None
        data = msg["data"]
        now = time()
        for item in data if isinstance(data, (list, tuple)) else [data]:
            if isinstance(item, bytes):
                self.aggregator.add_record(worker, item, now, span)
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

    def final_state(self, msg: FinalState) -> None:
        """Apply a closing worker's full payload: what its last heartbeat missed."""
        self.aggregator.ingest(msg["worker"], msg["data"], time())
