"""The active chunk: what one decorated ``process()`` call accumulates, per context."""

from __future__ import annotations

import os
from contextvars import ContextVar
from typing import Any

from roastcoffea.instrument._counters import COUNTERS

try:
    import psutil
except ImportError:  # pragma: no cover - psutil is an optional dependency
    psutil = None


class Rss:
    """The RSS of this process in MiB, or None without psutil (fork-safe)."""

    def __init__(self) -> None:
        self._pid = -1
        self._process: Any = None

    def __call__(self) -> float | None:
        if psutil is None:
            return None
        pid = os.getpid()
        if pid != self._pid:
            self._process = psutil.Process(pid)
            self._pid = pid
        return self._process.memory_info().rss / 1048576.0


rss = Rss()


class Chunk:
    """What one decorated ``process()`` call accumulates; lives in ``ACTIVE``."""

    __slots__ = ("bytes", "counts", "custom", "memory", "source", "timing")

    def __init__(self, source: Any) -> None:
        self.timing: dict[str, float] = {}
        self.memory: dict[str, float | None] = {}
        self.bytes: dict[str, int | None] = {}
        self.counts: dict[str, dict[str, int]] = {"timing": {}, "memory": {}, "bytes": {}}
        self.custom: dict[str, Any] = {}
        self.source = source

    def add(self, kind: str, name: str, value: float | None) -> None:
        """Accumulate one section measurement (None is sticky: unmeasurable)."""
        table: dict[str, Any] = getattr(self, kind)
        counts = self.counts[kind]
        counts[name] = counts.get(name, 0) + 1
        if value is None or (name in table and table[name] is None):
            table[name] = None
        else:
            table[name] = table.get(name, 0) + value


def checked_name(name: Any) -> str:
    if not isinstance(name, str):
        raise TypeError(f"section names are str, not {type(name).__name__}")
    return name


def safe_rss() -> float | None:
    """The RSS in MiB; a failure is counted and gives None."""
    try:
        return rss()
    except Exception as exc:
        COUNTERS.add("instrument_errors", exc)
        return None


ACTIVE: ContextVar[Chunk | None] = ContextVar("roastcoffea_active_chunk", default=None)
