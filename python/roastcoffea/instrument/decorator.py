"""``@track_metrics``: every call of a processor's ``process`` becomes a chunk record."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from roastcoffea._native import PhaseHook
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

    @functools.wraps(func)
    def process(self: Any, events: Any, *args: Any, **kwargs: Any) -> Any:
        # Only module-level names here: coffea pickles processors defined in
        # __main__ by value, this closure included, and the state behind
        # _run_tracked (a context variable, locks) cannot be pickled.
        return _run_tracked(func, self, events, args, kwargs)

    return process  # type: ignore[return-value]


def _run_tracked(
    func: Callable[..., Any], self: Any, events: Any, args: tuple, kwargs: dict
) -> Any:
    """Call ``func`` inside a chunk measurement (the body of :func:`track_metrics`)."""
    if getattr(self, "_roastcoffea_collect_metrics", True) is False:  # 0.1.2's off switch
        return func(self, events, *args, **kwargs)
    try:
        measure = _start_measure(events)
        token = ACTIVE.set(measure.chunk)
    except Exception as exc:  # never let the instrumentation break the task
        COUNTERS.add("instrument_errors", exc)
        return func(self, events, *args, **kwargs)
    COUNTERS.add("chunks")
    try:
        result = func(self, events, *args, **kwargs)
    except BaseException as exc:
        ACTIVE.reset(token)
        COUNTERS.add("chunk_errors")
        _finish_measure(measure, exc)
        raise
    ACTIVE.reset(token)
    _finish_measure(measure, None)
    return result
