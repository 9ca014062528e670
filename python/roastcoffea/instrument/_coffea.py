"""Reaching coffea's and uproot's objects from a chunk's events."""

from __future__ import annotations

import functools
import uuid as uuidlib
from typing import Any

from roastcoffea.instrument._counters import Unavailable


def factory(events: Any) -> Any:
    """The coffea ``NanoEventsFactory`` that made ``events``."""
    attrs = getattr(events, "attrs", None)
    if attrs is None:
        raise Unavailable("events have no attrs (not an awkward Array)")
    factory = attrs.get("@events_factory")
    if factory is None:
        raise Unavailable("events.attrs has no '@events_factory' (not coffea NanoEvents)")
    return factory


def file_handle(events_factory: Any) -> Any:
    handle = getattr(events_factory, "file_handle", None)
    if handle is None:
        raise Unavailable("the events factory has no file_handle (not read from a ROOT file)")
    return handle


def file_source(handle: Any) -> Any:
    """The uproot Source of a ``ReadOnlyDirectory`` or a ``ReadOnlyFile``."""
    source = getattr(getattr(handle, "file", handle), "source", None)
    if source is None or not isinstance(getattr(source, "num_requested_bytes", None), int):
        raise Unavailable(
            f"the file handle ({type(handle).__name__}) has no source with num_requested_bytes"
        )
    return source


def events_source(events: Any) -> Any:
    return file_source(file_handle(factory(events)))


def open_tree_of(handle: Any, treename: str) -> Any:
    directory = getattr(handle, "root_directory", handle)
    return directory[treename]


def file_uuid(value: Any) -> str | None:
    """coffea's ``fileuuid`` (str or 16 bytes) as the canonical UUID string."""
    if isinstance(value, (bytes, bytearray)) and len(value) == 16:
        return _canonical_uuid(bytes(value))
    if isinstance(value, str) and value:
        return _canonical_uuid(value)
    return None


@functools.lru_cache(maxsize=1024)  # the chunks of one file carry the same value
def _canonical_uuid(value: bytes | str) -> str:
    if isinstance(value, bytes):
        return str(uuidlib.UUID(bytes=value))
    try:
        return str(uuidlib.UUID(value))
    except ValueError:
        return value
