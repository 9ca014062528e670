"""The active chunk: what one decorated ``process()`` call accumulates, per context."""

from __future__ import annotations

import os
from contextvars import ContextVar
from typing import Any

from roastcoffea.instrument._counters import COUNTERS

#: Bytes per page, the unit of /proc/<pid>/statm.
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

try:
    import psutil
except ImportError:  # pragma: no cover - psutil is an optional dependency
    psutil = None


class Rss:
    """The RSS of this process in MiB, or None when it cannot be read (fork-safe).

    On Linux it is one ``pread`` of ``/proc/<pid>/statm``, the file psutil's
    ``memory_info`` parses (15-28 µs on a worker instead of ~85); elsewhere psutil.
    """

    def __init__(self) -> None:
        self._pid = -1
        self._statm = -1
        self._process: Any = None

    def __call__(self) -> float | None:
        pid = os.getpid()
        if pid != self._pid:
            self._open(pid)
        if self._statm >= 0:
            return int(os.pread(self._statm, 128, 0).split()[1]) * PAGE_SIZE / 1048576.0
        if self._process is not None:
            return self._process.memory_info().rss / 1048576.0
        return None

    def _open(self, pid: int) -> None:
        if self._statm >= 0:
            os.close(self._statm)  # the parent's, inherited over a fork
        self._statm, self._process, self._pid = -1, None, pid
        try:
            self._statm = os.open(f"/proc/{pid}/statm", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            self._process = None if psutil is None else psutil.Process(pid)


rss = Rss()


class Chunk:
    """What one decorated ``process()`` call accumulates; lives in ``ACTIVE``."""

    __slots__ = ("bytes", "counts", "custom", "memory", "pages", "source", "timing")

    def __init__(self, source: Any) -> None:
        self.timing: dict[str, float] = {}
        self.memory: dict[str, float | None] = {}
        self.bytes: dict[str, int | None] = {}
        self.counts: dict[str, dict[str, int]] = {"timing": {}, "memory": {}, "bytes": {}}
        self.custom: dict[str, Any] = {}
        self.source = source
        # RNTuple pages read: {(file, offset): (stored, uncompressed bytes, cluster)}
        self.pages: dict[tuple[Any, int], tuple[int, int, int]] = {}

    def pages_of(self, file: Any) -> dict[int, tuple[int, int, int]]:
        """The RNTuple pages of ``file`` read in this call,
        ``{offset: (stored, uncompressed, cluster)}``."""
        return {offset: sizes for (owner, offset), sizes in self.pages.items() if owner is file}

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
