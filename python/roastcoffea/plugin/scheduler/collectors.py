"""Which runs a live collector will collect, and how long the other records are kept.

A collector's run declares its span with one task of its own
(:data:`~roastcoffea.plugin.protocol.DECLARATION_PREFIX`, :mod:`roastcoffea.plugin.client.run`)
before any task of the run; the scheduler sees it in ``update_graph`` with the client that
submitted it, and the run is collected from then until its exit (the finish handler). A
record made in the subtree of a collected run's span is *collected*: the aggregator's
record store keeps it until that exit and drops one only when collected records alone
fill the store (counted for its run); its collector streams it away during the run
(:data:`~roastcoffea.plugin.protocol.RECORDS_HANDLER`), so collected records fill the store
only between two of its calls. Every other record (``track_metrics`` outside a
collector, a span snapshotted through the low-level calls, a run whose client left) is
*uncollected*: held in a quarter of the store of its own, the oldest dropped first, and
released after ``roastcoffea.uncollected-records-timeout``. A run whose client left the
scheduler will never be collected: its records are released at the next tick.
"""

from __future__ import annotations

from typing import Any

import roastcoffea.config as config
from roastcoffea.plugin.protocol import DECLARATION_PREFIX, RUN_ANNOTATION
from roastcoffea.plugin.scheduler.spans import SpanTree


class Collectors:
    """The live collectors' runs, by span id, with the client of each.

    Parameters
    ----------
    scheduler : distributed.Scheduler
    aggregator : roastcoffea._native.Aggregator
    spans : SpanTree
    timeout : float, optional
        Seconds an uncollected record is kept; default the setting
        ``roastcoffea.uncollected-records-timeout``.
    """

    def __init__(
        self, scheduler: Any, aggregator: Any, spans: SpanTree, timeout: float | None = None
    ) -> None:
        self.scheduler = scheduler
        self.aggregator = aggregator
        self.spans = spans
        self.timeout = float(config.seconds("uncollected-records-timeout", timeout))
        #: {run span id: id of the client that declared it}
        self.runs: dict[str, str] = {}
        self._verdicts: dict[str, bool] = {}  # span id -> collected; reset as runs change

    def declared(self, annotations: dict[str, dict[Any, Any]], client: Any) -> None:
        """Note the runs whose declaring task is among ``annotations`` (``update_graph``'s)."""
        for key, run in annotations.get(RUN_ANNOTATION, {}).items():
            if isinstance(run, str) and _declares(key):
                self.runs[run] = str(client)
                self._verdicts.clear()

    def ended(self, span_id: str) -> None:
        """A collector's exit: its run is no longer collected."""
        if self.runs.pop(span_id, None) is not None:
            self._verdicts.clear()

    def collects(self, span: str | None) -> bool:
        """Whether a live collector will collect the records of ``span``."""
        if span is None or not self.runs:
            return False
        verdict = self._verdicts.get(span)
        if verdict is None:
            verdict = self._verdicts[span] = any(s in self.runs for s in self.spans.lineage(span))
        return verdict

    def own_spans(self, span_id: str) -> list[str]:
        """The subtree of ``span_id`` less the subtrees of other live runs inside it, whose
        records their own collectors take."""
        subtree = self.spans.subtree(span_id)
        inner = [run for run in self.runs if run != span_id and run in subtree]
        if not inner:
            return subtree
        theirs = {span for run in inner for span in self.spans.subtree(run)}
        return [span for span in subtree if span not in theirs]

    def tidy(self, now: float) -> None:
        """Release the runs of clients that left, and the uncollected records past their time."""
        gone = [run for run, client in self.runs.items() if client not in self.scheduler.clients]
        for run in gone:
            self.ended(run)
            self.aggregator.release_records(self.spans.subtree(run))
        self.aggregator.expire_records(now - self.timeout)


def _declares(key: Any) -> bool:
    name = key[0] if isinstance(key, tuple) and key else key
    return isinstance(name, str) and name.startswith(DECLARATION_PREFIX + "-")
