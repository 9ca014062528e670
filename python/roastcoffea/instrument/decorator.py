"""``@track_metrics``: every call of a processor's ``process`` becomes a chunk record."""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable
from typing import Any, TypeVar

from roastcoffea._native import Around, PhaseHook
from roastcoffea.instrument._chunk import ACTIVE
from roastcoffea.instrument._counters import COUNTERS
from roastcoffea.instrument._measure import Measure

F = TypeVar("F", bound=Callable[..., Any])

# The instrumentation's own work, charged to ``other`` with the RSS and TKey
# header reads it makes (opaque): not the user's time, not the task's reads.
_start_measure = PhaseHook(Measure, "other", opaque=True)
_finish_measure = PhaseHook(Measure.finish, "other", opaque=True)


def track_metrics(func: F) -> F:
    """Make every call of a processor's ``process`` a chunk record.

    Parameters
    ----------
    func : callable
        ``process(self, events, *args, **kwargs)`` of a coffea processor.

    Returns
    -------
    callable
        The wrapped method; it returns what ``func`` returns, unchanged.

    Notes
    -----
    Measured around the call: wall time (``time.time`` and
    ``time.perf_counter``), thread CPU time, process RSS (``/proc/<pid>/statm``,
    else psutil) and the bytes the file source was asked for; from
    ``events.metadata``: dataset, file, uuid, tree, entry range; from coffea's
    access log: the branches read, and from the file's TBranch metadata their
    compressed and uncompressed bytes in the baskets of this entry range. On a Dask worker
    the plugin adds the whole task's time and bytes when the task ends.
    Exceptions of ``func`` are re-raised after the record (with ``error``)
    is sent. Setting ``_roastcoffea_collect_metrics = False`` on the
    processor (or its class), roastcoffea 0.1.2's off switch, turns the
    records off.
    """

    # No frame of its own on the task's stack while process runs (Dask's profiler walks
    # it every 10 ms); enter and leave are module-level functions, which pickle by
    # reference when coffea ships a processor defined in __main__ by value.
    tracked = Around(func, _enter_tracked, _leave_tracked)
    functools.update_wrapper(tracked, func)
    return tracked  # type: ignore[return-value]


def _enter_tracked(
    self: Any, events: Any, *args: Any, **kwargs: Any
) -> tuple[Measure, contextvars.Token] | None:
    """A chunk measurement's start: its measure and the token of the active chunk; None when
    the processor turned the records off or the start failed (counted)."""
    if getattr(self, "_roastcoffea_collect_metrics", True) is False:  # 0.1.2's off switch
        return None
    try:
        measure = _start_measure(events)
        token = ACTIVE.set(measure.chunk)
    except Exception as exc:  # never let the instrumentation break the task
        COUNTERS.add("instrument_errors", exc)
        return None
    COUNTERS.add("chunks")
    return measure, token


def _leave_tracked(state: tuple[Measure, contextvars.Token], error: BaseException | None) -> None:
    """A chunk measurement's end: the record, with ``error`` if ``process`` raised."""
    measure, token = state
    try:
        ACTIVE.reset(token)
    except ValueError as exc:  # reset in another context than the start's
        COUNTERS.add("instrument_errors", exc)
    if error is not None:
        COUNTERS.add("chunk_errors")
    _finish_measure(measure, error)
