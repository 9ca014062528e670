"""Process-wide counters of the instrumentation, and the reasons values are missing."""

from __future__ import annotations

import threading
from typing import Any

#: Longest ``error`` message kept in a record.
MAX_ERROR_CHARS = 2000


class Unavailable(Exception):
    """A value cannot be measured; the message is the reason."""


class Counters:
    """Process-wide counters of the instrumentation (thread-safe)."""

    NAMES = (
        "chunks",
        "chunk_errors",
        "records_to_worker",
        "records_local",
        "records_local_refused",
        "instrument_errors",
        "files_seen_resets",
    )

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values = dict.fromkeys(self.NAMES, 0)
        self.last_error: str | None = None

    def add(self, name: str, error: BaseException | None = None) -> None:
        with self._lock:
            self._values[name] += 1
            if error is not None:
                self.last_error = describe(error)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {**self._values, "last_error": self.last_error}


COUNTERS = Counters()


def instrumentation_counters() -> dict[str, Any]:
    """Counters of the instrumentation in this process.

    Returns
    -------
    dict
        ``chunks`` decorated calls, ``chunk_errors`` calls whose ``process()``
        raised, ``records_to_worker`` and ``records_local`` records handed to
        the worker plugin or the local store, ``records_local_refused`` (store
        full), ``instrument_errors`` measurements that failed unexpectedly,
        ``files_seen_resets``, and ``last_error`` (text of the last failure).
    """
    return COUNTERS.snapshot()


def describe(exc: BaseException) -> str:
    """``"ExcType: message"``, bounded."""
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 3] + "..."
