"""The scheduler's span tree, as the aggregator needs it."""

from __future__ import annotations

from itertools import islice
from typing import Any

from roastcoffea.plugin.dask_versions import spans_extension


class SpanTree:
    """Tells the aggregator about spans it has not seen, and walks subtrees.

    Dask keeps every span for the life of the scheduler, in the order it made them,
    and never removes one, so a span is sent to the aggregator once: the spans
    after the first ``sent``, which costs no memory per span here.

    Parameters
    ----------
    scheduler : distributed.Scheduler
    aggregator : roastcoffea._native.Aggregator
    """

    def __init__(self, scheduler: Any, aggregator: Any) -> None:
        self._extension = spans_extension(scheduler)
        self._aggregator = aggregator
        self.sent = 0

    def sync(self) -> int:
        """Send every new span (id, parent id, name) to the aggregator.

        Returns
        -------
        int
            The number of spans sent.
        """
        spans = self._spans()
        if len(spans) < self.sent:  # not Dask's span store as we know it: send them all
            self.sent = 0
        new = list(islice(spans.items(), self.sent, None))
        for span_id, span in new:
            parent = span.parent.id if span.parent is not None else None
            self._aggregator.set_span(span_id, parent, tuple(str(tag) for tag in span.name))
        self.sent += len(new)
        return len(new)

    def subtree(self, span_id: str) -> list[str]:
        """``span_id`` and the ids of all its descendants.

        A span the scheduler does not know (no task was ever submitted in it)
        is returned alone, so that a snapshot of it is empty rather than
        unfiltered.
        """
        span = self._spans().get(span_id)
        if span is None:
            return [span_id]
        return [s.id for s in span.traverse_spans()]

    def lineage(self, span_id: str) -> list[str]:
        """``span_id`` and the ids of the spans enclosing it, innermost first."""
        span = self._spans().get(span_id)
        if span is None:
            return [span_id]
        ids = []
        while span is not None:
            ids.append(span.id)
            span = span.parent
        return ids

    def inside(self, span_id: str, tag: str) -> bool:
        """Whether a span enclosing ``span_id`` (not itself) has the tag ``tag``."""
        span = self._spans().get(span_id)
        parent = span.parent if span is not None else None
        while parent is not None:
            if parent.name and parent.name[-1] == tag:
                return True
            parent = parent.parent
        return False

    def _spans(self) -> dict[str, Any]:
        return self._extension.spans if self._extension is not None else {}
