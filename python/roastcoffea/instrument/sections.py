"""Sections of a chunk (time, memory, bytes) and custom metrics, for a processor's body."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TypeGuard, TypeVar

import numpy

from roastcoffea.instrument._chunk import ACTIVE, Chunk, checked_name, safe_rss
from roastcoffea.instrument._coffea import events_source

#: Reads the quantity a section measures (None when it cannot).
Reading = Callable[[], float | None]


@contextmanager
def _section(kind: str, section_name: str, reader: Callable[[Chunk], Reading]) -> Iterator[None]:
    """Add the change of ``reader(chunk)()`` over a block to the chunk's ``kind`` table.

    None before or after makes the section unmeasurable (None is sticky).
    Outside a ``@track_metrics`` call it does nothing.
    """
    name = checked_name(section_name)
    chunk = ACTIVE.get()
    if chunk is None:
        yield
        return
    read = reader(chunk)
    before = read()
    try:
        yield
    finally:
        after = read()
        chunk.add(kind, name, None if before is None or after is None else after - before)


def track_time(processor_self: Any, section_name: str) -> AbstractContextManager[None]:
    """Add the wall time of a block to the chunk's ``timing[section_name]``.

    Seconds of ``time.perf_counter``, recorded also when the block raises.
    Outside a ``@track_metrics`` call it does nothing.

    Parameters
    ----------
    processor_self : ProcessorABC
        The processor (kept for compatibility with roastcoffea 0.1.2; not used
        or modified).
    section_name : str
        The section; repeated names within one chunk add up, and
        ``section_counts["timing"][section_name]`` counts the blocks.

    Raises
    ------
    TypeError
        If ``section_name`` is not a str.
    """
    return _section("timing", section_name, lambda chunk: time.perf_counter)


#: Alias of :func:`track_time` (the name of the 0.1 development series).
track_section = track_time


def track_memory(processor_self: Any, section_name: str) -> AbstractContextManager[None]:
    """Add the change of process RSS over a block to ``memory[section_name]``.

    MiB of resident set size (``/proc/<pid>/statm``, else psutil); None when
    neither can be read.
    Outside a ``@track_metrics`` call it does nothing.

    Parameters
    ----------
    processor_self : ProcessorABC
        The processor (not used or modified).
    section_name : str
        The section; repeated names within one chunk add up their deltas.

    Raises
    ------
    TypeError
        If ``section_name`` is not a str.
    """
    return _section("memory", section_name, lambda chunk: safe_rss)


def track_bytes(
    processor_self: Any, events: Any, section_name: str
) -> AbstractContextManager[None]:
    """Add the bytes read from the file over a block to ``bytes[section_name]``.

    The change of uproot's ``source.num_requested_bytes``; None when no source
    is reachable. Outside a ``@track_metrics`` call it does nothing.

    Parameters
    ----------
    processor_self : ProcessorABC
        The processor (not used or modified).
    events : awkward.Array
        NanoEvents of the chunk, whose file source is watched; when they do
        not lead to one, the chunk's own file source is used.
    section_name : str
        The section; repeated names within one chunk add up.

    Raises
    ------
    TypeError
        If ``section_name`` is not a str.
    """

    def reader(chunk: Chunk) -> Reading:
        try:
            source = events_source(events)
        except Exception:
            source = chunk.source
        return (lambda: None) if source is None else (lambda: source.num_requested_bytes)

    return _section("bytes", section_name, reader)


_Context = TypeVar("_Context", bound="BaseInstrumentationContext")


class BaseInstrumentationContext:
    """Base class for custom instrumentation that writes into the chunk record.

    Subclass it and override :meth:`__enter__` / :meth:`__exit__`; call
    :meth:`record_metric` to store values in the active chunk's ``custom``
    map::

        class CountJets(BaseInstrumentationContext):
            def __init__(self, events):
                self.events = events

            def __exit__(self, exc_type, exc, tb):
                self.record_metric("jets", int(ak.sum(ak.num(self.events.Jet))))

        with CountJets(events):
            ...

    Semantics: the chunk is looked up when :meth:`record_metric` is called,
    so an instance may be made anywhere. Within one chunk, a number (int or
    float, not bool) recorded again under the same name is added to the
    previous number; any other value (str, bool, None), or a number following
    a non-number, replaces it. Outside a ``@track_metrics`` call nothing is
    recorded. The base ``__enter__`` returns ``self`` and the base
    ``__exit__`` does nothing (exceptions propagate).
    """

    def __enter__(self: _Context) -> _Context:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        return None

    @property
    def active(self) -> bool:
        """Whether a ``@track_metrics`` call is active in this thread/context."""
        return ACTIVE.get() is not None

    def record_metric(self, name: str, value: Any) -> bool:
        """Store ``value`` under ``name`` in the active chunk's ``custom`` map.

        Parameters
        ----------
        name : str
        value : int, float, bool, str or None
            NumPy scalars are converted to Python values.

        Returns
        -------
        bool
            True if recorded, False outside a ``@track_metrics`` call.

        Raises
        ------
        TypeError
            If ``name`` is not a str or ``value`` is not one of the types above.
        """
        if not isinstance(name, str):
            raise TypeError(f"metric names are str, not {type(name).__name__}")
        if isinstance(value, numpy.generic):
            value = value.item()
        if not isinstance(value, (int, float, str, type(None))):
            raise TypeError(
                f"custom metric {name!r} must be a number, bool, str or None, "
                f"not {type(value).__name__}"
            )
        chunk = ACTIVE.get()
        if chunk is None:
            return False
        previous = chunk.custom.get(name)
        if _is_number(value) and _is_number(previous):
            chunk.custom[name] = previous + value
        else:
            chunk.custom[name] = value
        return True


def _is_number(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
