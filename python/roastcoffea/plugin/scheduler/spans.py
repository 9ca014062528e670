"""The scheduler's span tree, as the aggregator needs it."""

from __future__ import annotations

from typing import Any

from roastcoffea.plugin.dask_versions import spans_extension


class SpanTree:
    """Tells the aggregator about spans it has not seen, and walks subtrees.

    Dask keeps every span for the life of the scheduler and never removes one,
    so a span is sent to the aggregator once, and nothing needs doing while the
    number of spans is unchanged.

    Parameters
    ----------
    scheduler : distributed.Scheduler
    aggregator : roastcoffea._native.Aggregator
    """

    def __init__(self, scheduler: Any, aggregator: Any) -> None:
        self._extension = spans_extension(scheduler)
        self._aggregator = aggregator
        self._known: set[str] = set()

    def sync(self) -> int:
        """Send every new span (id, parent id, name) to the aggregator.

        Returns
        -------
        int
            The number of spans sent.
        """
        spans = self._spans()
        if len(spans) == len(self._known):
            return 0
        sent = 0
        for span_id, span in list(spans.items()):
            if span_id in self._known:
                continue
            parent = span.parent.id if span.parent is not None else None
            self._aggregator.set_span(span_id, parent, tuple(str(tag) for tag in span.name))
            self._known.add(span_id)
            sent += 1
        return sent

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
