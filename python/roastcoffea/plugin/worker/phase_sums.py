"""A worker's ended tasks' phase digests, summed and filed with Dask once per heartbeat.

Dask's ``digest_metric`` costs a few microseconds per call and a task has about 25
digests: summed here per (span, prefix) and layout, value by value, each is filed once
before each heartbeat payload, full state and teardown, for Dask's own span totals (the
scheduler's own tables got them with each task's records).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from operator import add
from typing import Any

from roastcoffea.phase_vocabulary import PhaseDigests, digest_labels

logger = logging.getLogger(__name__)


class PhaseSums:
    """The sums, on the event loop. ``count`` counts ``hook_errors``; nothing raises."""

    def __init__(self, count: Callable[[str], None]) -> None:
        self._count = count
        self._sums: dict[tuple[Any, Any, Any], list[float]] = {}

    def add(self, where: tuple[Any, Any], digests: PhaseDigests) -> None:
        """Add a task's digests to the sums of its (span, prefix) and layout.

        Also runs as a loop callback, after a teardown perhaps.
        """
        try:
            layout, values = digests
            key = (*where, layout)
            sums = self._sums.get(key)
            self._sums[key] = values if sums is None else list(map(add, sums, values))
        except Exception:
            self._count("hook_errors")
            logger.debug("roastcoffea phase digests not summed", exc_info=True)

    def file(self, digest_metric: Callable[[Any, float], None]) -> None:
        """File each sum under ``("execute", span, prefix, activity, unit)``, as Dask files
        what a task sends through its context meter; empties the sums."""
        sums, self._sums = self._sums, {}
        try:
            for (span, prefix, layout), values in sums.items():
                for (activity, unit), value in zip(digest_labels(layout), values, strict=True):
                    digest_metric(("execute", span, prefix, activity, unit), value)
        except Exception:
            self._count("hook_errors")
            logger.debug("roastcoffea phase digests not filed", exc_info=True)

    def clear(self) -> None:
        self._sums.clear()
