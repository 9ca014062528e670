"""Chunk instrumentation of coffea processors: ``@track_metrics`` and sections.

Decorate a processor's ``process`` and every call becomes one *chunk record*
(:mod:`roastcoffea.records` lists its keys)::

    class MyProcessor(processor.ProcessorABC):
        @track_metrics
        def process(self, events):
            with track_time(self, "selection"):
                ...
            with track_bytes(self, events, "jets"):
                jets = events.Jet.pt + 0
            return output

No opt-in is needed. On a Dask worker with the roastcoffea worker plugin (which
:class:`~roastcoffea.RoastPlugin` installs), the record goes to the plugin,
which adds the whole task's time on the worker when the task ends and ships it
to the scheduler with the heartbeats; a collector finds it in its span.
Anywhere else (e.g. coffea's iterative executor in the client process) it goes
to this process's bounded store, :func:`roastcoffea.records.drain_local_records`.

The decorator never changes the processor, its class or its output, and never
raises an error of its own: what cannot be measured is None in the record with
the reason in ``record["unavailable"]``, and internal failures are counted
(:func:`instrumentation_counters`). An exception of ``process()`` itself is
re-raised after a record with ``error`` set has been sent.

The active chunk is found through a context variable, so the section context
managers work with any number of worker threads; outside a decorated call
they do nothing.
"""

from __future__ import annotations

import functools
import os
import queue
import struct
import threading
import time
import uuid as uuidlib
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

import dask
import numpy
from distributed import get_worker
from distributed.worker import thread_state

from roastcoffea.records import RECORD_VERSION, queue_local

try:
    import psutil
except ImportError:  # pragma: no cover - psutil is an optional dependency
    psutil = None

F = TypeVar("F", bound=Callable[..., Any])

#: Name of the worker plugin (see roastcoffea.plugin._workers.PLUGIN_NAME).
_PLUGIN_NAME = "roastcoffea"
#: Longest ``error`` message kept in a record.
MAX_ERROR_CHARS = 2000
#: Memory the basket indexes of recently read trees may use per process.
MAX_TREE_INDEX_BYTES = 64 << 20
#: (worker, span, file, tree) combinations remembered as having sent their
#: ``file_metadata``; when full the memory is cleared and counted.
MAX_FILES_SEEN = 65536
#: ROOT TKey header: fNbytes, fVersion, fObjlen, fDatime, fKeylen (big-endian).
_TKEY_HEAD = struct.Struct(">ihiIh")

_ACTIVE: ContextVar[_Chunk | None] = ContextVar("roastcoffea_active_chunk", default=None)


class _Unavailable(Exception):
    """A value cannot be measured; the message is the reason."""


class _Counters:
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
                self.last_error = _describe(error)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {**self._values, "last_error": self.last_error}


_COUNTERS = _Counters()


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
    return _COUNTERS.snapshot()


def _describe(exc: BaseException) -> str:
    """``"ExcType: message"``, bounded."""
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 3] + "..."


class _Rss:
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


_rss = _Rss()


class _Chunk:
    """What one decorated ``process()`` call accumulates; lives in ``_ACTIVE``."""

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


def _section_name(name: Any) -> str:
    if not isinstance(name, str):
        raise TypeError(f"section names are str, not {type(name).__name__}")
    return name


# --- reaching coffea's file objects ------------------------------------------------


def _factory(events: Any) -> Any:
    """The coffea ``NanoEventsFactory`` that made ``events``."""
    attrs = getattr(events, "attrs", None)
    if attrs is None:
        raise _Unavailable("events have no attrs (not an awkward Array)")
    factory = attrs.get("@events_factory")
    if factory is None:
        raise _Unavailable("events.attrs has no '@events_factory' (not coffea NanoEvents)")
    return factory


def _file_handle(factory: Any) -> Any:
    handle = getattr(factory, "file_handle", None)
    if handle is None:
        raise _Unavailable("the events factory has no file_handle (not read from a ROOT file)")
    return handle


def _source(handle: Any) -> Any:
    """The uproot Source of a ``ReadOnlyDirectory`` or a ``ReadOnlyFile``."""
    source = getattr(getattr(handle, "file", handle), "source", None)
    if source is None or not isinstance(getattr(source, "num_requested_bytes", None), int):
        raise _Unavailable(
            f"the file handle ({type(handle).__name__}) has no source with num_requested_bytes"
        )
    return source


def _events_source(events: Any) -> Any:
    return _source(_file_handle(_factory(events)))


def _tree(handle: Any, treename: str) -> Any:
    directory = getattr(handle, "root_directory", handle)
    return directory[treename]


def _file_uuid(value: Any) -> str | None:
    """coffea's ``fileuuid`` (str or 16 bytes) as the canonical UUID string."""
    if isinstance(value, (bytes, bytearray)) and len(value) == 16:
        return str(uuidlib.UUID(bytes=bytes(value)))
    if isinstance(value, str) and value:
        try:
            return str(uuidlib.UUID(value))
        except ValueError:
            return value
    return None


# --- per-process caches ----------------------------------------------------------


class _TreeIndex:
    """Every basket of a tree as flat arrays, for per-chunk byte sums.

    Built once per (file, tree) and process (walking ~1500 NanoAOD branches
    costs tens of milliseconds; a chunk's sums then cost microseconds).
    Basket ``i`` holds entries ``[starts[i], stops[i])`` in ``compressed[i]``
    bytes (TKey included); ``seeks[i]`` is its file position, or -1 for an
    embedded basket whose uncompressed size is ``embedded_uncompressed[i]``.
    A basket's identity in a record is its seek (unique in the file), or
    ``-(i + 1)`` for an embedded one (unique in the tree).
    """

    __slots__ = (
        "branches",
        "compressed",
        "embedded_uncompressed",
        "nbytes",
        "seeks",
        "starts",
        "stops",
        "tree_compressed",
        "tree_uncompressed",
    )

    def __init__(self, tree: Any) -> None:
        self.branches: dict[str, tuple[int, int]] = {}
        columns: list[tuple[numpy.ndarray, ...]] = []
        position = 0
        for name, branch in tree.iteritems(recursive=True):
            column = _branch_baskets(branch)
            columns.append(column)
            self.branches[name] = (position, position + len(column[0]))
            position += len(column[0])
        joined = [
            numpy.concatenate([column[i] for column in columns])
            if columns
            else numpy.zeros(0, numpy.int64)
            for i in range(5)
        ]
        self.starts, self.stops, self.compressed, self.seeks, self.embedded_uncompressed = joined
        self.tree_compressed = int(tree.compressed_bytes)
        self.tree_uncompressed = int(tree.uncompressed_bytes)
        self.nbytes = sum(array.nbytes for array in joined) + 128 * len(self.branches)

    def chunk_baskets(self, names: list[str], start: int, stop: int) -> tuple[ChunkBaskets, int]:
        """The baskets of ``names`` overlapping ``[start, stop)``, and the range's size.

        Returns
        -------
        baskets : ChunkBaskets
            Those baskets, normal ones in file order, then embedded ones.
        in_range : int
            Compressed bytes of the baskets of every branch overlapping the range.

        Raises
        ------
        KeyError
            For a name that is not a branch of the tree.
        """
        overlap = (self.starts < stop) & (self.stops > start)
        in_range = int(self.compressed[overlap].sum())
        parts = [numpy.arange(*self.branches[name]) for name in names]
        chosen = numpy.concatenate(parts) if parts else numpy.zeros(0, numpy.int64)
        chosen = numpy.unique(chosen[overlap[chosen]])
        seeks = self.seeks[chosen]
        normal = chosen[seeks >= 0]
        normal = normal[numpy.argsort(self.seeks[normal], kind="stable")]
        embedded = chosen[seeks < 0]
        return (
            ChunkBaskets(
                normal_seeks=self.seeks[normal].tolist(),
                normal_compressed=self.compressed[normal].tolist(),
                embedded_ids=(-(embedded + 1)).tolist(),
                embedded_uncompressed=self.embedded_uncompressed[embedded].tolist(),
            ),
            in_range,
        )


class ChunkBaskets:
    """The baskets one chunk read: normal ones by seek, embedded ones by identity."""

    __slots__ = ("embedded_ids", "embedded_uncompressed", "normal_compressed", "normal_seeks")

    def __init__(
        self,
        normal_seeks: list[int],
        normal_compressed: list[int],
        embedded_ids: list[int],
        embedded_uncompressed: list[int],
    ) -> None:
        self.normal_seeks = normal_seeks
        self.normal_compressed = normal_compressed
        self.embedded_ids = embedded_ids
        self.embedded_uncompressed = embedded_uncompressed

    def record_fields(self, normal_uncompressed: list[int]) -> dict[str, Any]:
        """The record's byte fields, given the normal baskets' uncompressed sizes."""
        embedded = sum(self.embedded_uncompressed)
        return {
            "accessed_bytes": sum(self.normal_compressed),
            "accessed_uncompressed_bytes": sum(normal_uncompressed) + embedded,
            "accessed_embedded_bytes": embedded,
            "accessed_baskets": {
                "id": self.normal_seeks + self.embedded_ids,
                "compressed": self.normal_compressed + [0] * len(self.embedded_ids),
                "uncompressed": normal_uncompressed + self.embedded_uncompressed,
            },
        }


def _embedded_size(basket: Any) -> int:
    """The bytes an embedded basket holds, counted as a stored basket's fObjlen + fKeylen.

    An embedded basket's fObjlen is its buffer's capacity, not its data. Its
    data ends at fLast (key included); a jagged branch's entry offsets follow
    as a counted array of fNevBuf + 1 ints, as ROOT writes them to a stored basket.
    """
    offsets = basket.byte_offsets
    return int(basket.member("fLast")) + (0 if offsets is None else 4 * (len(offsets) + 1))


def _branch_baskets(branch: Any) -> tuple[numpy.ndarray, ...]:
    """``(starts, stops, compressed, seeks, embedded_uncompressed)`` of a branch."""
    embedded = branch.embedded_baskets
    n_normal = branch.num_baskets - len(embedded)
    entries = numpy.asarray(branch.member("fBasketEntry")[: n_normal + 1], dtype=numpy.int64)
    starts = [entries[:n_normal]]
    stops = [entries[1 : n_normal + 1]]
    compressed = [numpy.asarray(branch.member("fBasketBytes")[:n_normal], dtype=numpy.int64)]
    seeks = [numpy.asarray(branch.member("fBasketSeek")[:n_normal], dtype=numpy.int64)]
    uncompressed = [numpy.zeros(n_normal, numpy.int64)]
    for number, basket in enumerate(embedded, start=n_normal):
        first, last = branch.basket_entry_start_stop(number)
        starts.append(numpy.array([first], numpy.int64))
        stops.append(numpy.array([last], numpy.int64))
        compressed.append(numpy.array([branch.basket_compressed_bytes(number)], numpy.int64))
        seeks.append(numpy.array([-1], numpy.int64))
        uncompressed.append(numpy.array([_embedded_size(basket)], numpy.int64))
    return tuple(numpy.concatenate(c) for c in (starts, stops, compressed, seeks, uncompressed))


class _TreeIndexes:
    """Least-recently-used :class:`_TreeIndex` per (file, tree), bounded in bytes."""

    def __init__(self, cap_bytes: int) -> None:
        self.cap_bytes = cap_bytes
        self._lock = threading.Lock()
        self._indexes: OrderedDict[tuple[str, str], _TreeIndex] = OrderedDict()
        self._bytes = 0

    def get(self, file_key: str, treename: str, open_tree: Callable[[], Any]) -> _TreeIndex:
        """The index of a tree; ``open_tree()`` is called only to build it.

        (Looking a tree up in its directory reads its key from the file each
        time, a round trip on remote files.)
        """
        key = (file_key, treename)
        with self._lock:
            index = self._indexes.get(key)
            if index is not None:
                self._indexes.move_to_end(key)
                return index
        index = _TreeIndex(open_tree())
        with self._lock:
            if key not in self._indexes and index.nbytes <= self.cap_bytes:
                self._indexes[key] = index
                self._bytes += index.nbytes
                while self._bytes > self.cap_bytes:
                    _, old = self._indexes.popitem(last=False)
                    self._bytes -= old.nbytes
        return index


class _SeenFiles:
    """(worker, span, file, tree) that already sent ``file_metadata``, bounded."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._lock = threading.Lock()
        self._seen: set[tuple[Any, ...]] = set()

    def first(self, key: tuple[Any, ...]) -> bool:
        with self._lock:
            if key in self._seen:
                return False
            if len(self._seen) >= self.cap:
                self._seen.clear()
                _COUNTERS.add("files_seen_resets")
            self._seen.add(key)
            return True


_TREE_INDEXES = _TreeIndexes(MAX_TREE_INDEX_BYTES)
_FILES_SEEN = _SeenFiles(MAX_FILES_SEEN)


# --- basket arithmetic ----------------------------------------------------------


def _uncompressed_from_keys(source: Any, seeks: list[int], sizes: list[int]) -> list[int]:
    """fObjlen + fKeylen of each normal basket's TKey, read in one request.

    ``seeks`` and ``sizes`` are the baskets' positions and compressed sizes;
    each TKey's fNbytes must equal the size the branch metadata gives.
    uproot's ``basket_uncompressed_bytes`` reads the same header, one request
    per basket (one round trip each on remote files).

    Raises
    ------
    ValueError
        If a header does not match its basket.
    """
    if not seeks:
        return []
    ranges = [(seek, seek + _TKEY_HEAD.size) for seek in seeks]
    chunks = source.chunks(ranges, notifications=queue.Queue())
    sizes_out = []
    for chunk, seek, size in zip(chunks, seeks, sizes, strict=True):
        nbytes, _, objlen, _, keylen = _TKEY_HEAD.unpack(bytes(chunk.raw_data[: _TKEY_HEAD.size]))
        if nbytes != size or objlen < 0 or keylen <= 0:
            raise ValueError(f"the TKey at {seek} does not describe a basket of {size} bytes")
        sizes_out.append(objlen + keylen)
    return sizes_out


# --- the decorator ---------------------------------------------------------------


class _Measure:
    """Start values of one decorated call, and the record being built."""

    __slots__ = (
        "bytes0",
        "chunk",
        "cpu0",
        "events",
        "factory",
        "log_start",
        "mem0",
        "perf0",
        "record",
        "unavailable",
    )

    def __init__(self, events: Any) -> None:
        self.events = events
        self.unavailable: dict[str, str] = {}
        self.record: dict[str, Any] = {"kind": "chunk", "v": RECORD_VERSION}
        self.factory: Any = None
        self.log_start = 0
        self.bytes0: int | None = None
        source = None
        self._metadata()
        try:
            self.factory = _factory(events)
            source = _source(_file_handle(self.factory))
            self.bytes0 = source.num_requested_bytes
        except Exception as exc:
            self._lost("bytes_read", exc)
        log = getattr(self.factory, "access_log", None)
        self.log_start = len(log) if isinstance(log, list) else 0
        self.chunk = _Chunk(source)
        self.mem0 = self._memory("mem_before_mb")
        self.record["t_start"] = time.time()
        self.cpu0 = time.thread_time()
        self.perf0 = time.perf_counter()

    def _lost(self, keys: str | tuple[str, ...], exc: BaseException) -> None:
        """Note why ``keys`` are unmeasurable; an unexpected failure is counted once."""
        reason = str(exc) if isinstance(exc, _Unavailable) else _describe(exc)
        for key in (keys,) if isinstance(keys, str) else keys:
            self.unavailable[key] = reason
        if not isinstance(exc, _Unavailable):
            _COUNTERS.add("instrument_errors", exc)

    def _memory(self, key: str) -> float | None:
        try:
            value = _rss()
        except Exception as exc:
            self._lost(key, exc)
            return None
        if value is None:
            self.unavailable[key] = "psutil is not installed"
        return value

    def _metadata(self) -> None:
        record = self.record
        try:
            record["num_events"] = len(self.events)
        except Exception as exc:
            record["num_events"] = None
            self._lost("num_events", exc)
        try:
            meta = getattr(self.events, "metadata", None)
            meta = meta if isinstance(meta, dict) else {}
        except Exception as exc:
            meta = {}
            self._lost("dataset", exc)
        fields = (
            ("dataset", "dataset"),
            ("file", "filename"),
            ("treename", "treename"),
            ("entry_start", "entrystart"),
            ("entry_stop", "entrystop"),
        )
        for key, name in fields:
            value = meta.get(name)
            record[key] = value if isinstance(value, (str, int)) else None
            if record[key] is None:
                self.unavailable.setdefault(key, f"events.metadata has no {name!r}")
        record["uuid"] = _file_uuid(meta.get("fileuuid"))
        if record["uuid"] is None:
            self.unavailable["uuid"] = "events.metadata has no 'fileuuid'"

    def finish(self, error: BaseException | None) -> None:
        """Take the end values, derive the rest, hand the record on. Never raises."""
        try:
            self._finish(error)
        except Exception as exc:  # a bug here must not reach the user's task
            _COUNTERS.add("instrument_errors", exc)

    def _finish(self, error: BaseException | None) -> None:
        perf1 = time.perf_counter()
        cpu1 = time.thread_time()
        record = self.record
        record["t_end"] = time.time()
        record["duration"] = perf1 - self.perf0
        record["process_cpu_s"] = cpu1 - self.cpu0
        mem1 = self._memory("mem_after_mb")
        source = self.chunk.source
        bytes1 = source.num_requested_bytes if source is not None else None
        record["mem_before_mb"] = self.mem0
        record["mem_after_mb"] = mem1
        record["mem_delta_mb"] = None if self.mem0 is None or mem1 is None else mem1 - self.mem0
        if self.mem0 is None or mem1 is None:
            self.unavailable["mem_delta_mb"] = "RSS not measured"
        record["bytes_read"] = None if bytes1 is None else bytes1 - self.bytes0
        record["error"] = None if error is None else _describe(error)

        worker, plugin, key, span = _destination()
        own_bytes = self._files(worker, span, source)
        record["instrument_bytes"] = None if source is None else own_bytes
        if source is None:
            self.unavailable["instrument_bytes"] = self.unavailable.get(
                "bytes_read", "no file source"
            )
        chunk = self.chunk
        record["timing"] = chunk.timing
        record["memory"] = chunk.memory
        record["bytes"] = chunk.bytes
        record["section_counts"] = chunk.counts
        record["custom"] = chunk.custom
        record["unavailable"] = self.unavailable
        record["timestamp"] = time.time()
        if plugin is not None:
            plugin.add_chunk(key, record, source, own_bytes)
            _COUNTERS.add("records_to_worker")
            return
        record.update(task_key=None, prefix=None, worker=None, span=span)
        for field in ("task_start", "task_end", "task_duration", "bytes_read_task"):
            record[field] = None
            self.unavailable[field] = "not run in a Dask task with the roastcoffea worker plugin"
        if queue_local(record):
            _COUNTERS.add("records_local")
        else:
            _COUNTERS.add("records_local_refused")

    def _files(self, worker: Any, span: str | None, source: Any) -> int:
        """Branch, byte and file fields; returns the bytes this itself requested."""
        record = self.record
        branch_keys = (
            "accessed_branches",
            "num_branches_accessed",
            "branches_read_percent",
            "accessed_bytes",
            "accessed_uncompressed_bytes",
            "accessed_embedded_bytes",
            "accessed_baskets",
            "bytes_read_percent",
        )
        for key in (*branch_keys, "file_metadata"):
            record[key] = None
        try:
            log = getattr(self.factory, "access_log", None)
            if not isinstance(log, list):
                raise _Unavailable("the events factory has no access_log")
            names = list(dict.fromkeys(entry.branch for entry in log[self.log_start :]))
            record["accessed_branches"] = names
            record["num_branches_accessed"] = len(names)
        except Exception as exc:
            self._lost(branch_keys, exc)
            return 0
        before = source.num_requested_bytes if source is not None else 0
        try:
            handle = _file_handle(self.factory)
            treename, start, stop = record["treename"], record["entry_start"], record["entry_stop"]
            if treename is None or start is None or stop is None:
                raise _Unavailable("events.metadata lacks the tree name or the entry range")
            if source is None:
                raise _Unavailable("no file source with num_requested_bytes")
            file_key = str(getattr(getattr(handle, "file", handle), "uuid", record["file"]))
            index = _TREE_INDEXES.get(file_key, treename, lambda: _tree(handle, treename))
            branches = len(index.branches)
            if branches:
                record["branches_read_percent"] = 100.0 * len(names) / branches
            baskets, in_range = index.chunk_baskets(names, start, stop)
            normal_uncompressed = _uncompressed_from_keys(
                source, baskets.normal_seeks, baskets.normal_compressed
            )
            record.update(baskets.record_fields(normal_uncompressed))
            if in_range > 0:
                record["bytes_read_percent"] = 100.0 * record["accessed_bytes"] / in_range
            else:
                self.unavailable["bytes_read_percent"] = "the entry range holds no baskets"
            address = getattr(worker, "address", None)
            if _FILES_SEEN.first((address, span, file_key, treename)):
                record["file_metadata"] = {
                    "filename": record["file"],
                    "compression_ratio": (
                        index.tree_uncompressed / index.tree_compressed
                        if index.tree_compressed
                        else None
                    ),
                    "total_branches": branches,
                    "total_tree_bytes": index.tree_compressed,
                }
        except Exception as exc:
            lost = tuple(key for key in branch_keys[2:] if record[key] is None)
            self._lost((*lost, "file_metadata"), exc)
        after = source.num_requested_bytes if source is not None else 0
        return after - before


def _destination() -> tuple[Any, Any, Any, str | None]:
    """``(worker, plugin, task key, span)`` of the calling thread.

    On a worker with the plugin the span is the running task's; otherwise the
    plugin is None and the span is the caller's innermost ``distributed.span``
    (dask annotations are a context variable), if any.
    """
    worker = plugin = key = None
    try:
        worker = get_worker()
    except ValueError:  # not in a Dask task
        pass
    else:
        plugin = worker.plugins.get(_PLUGIN_NAME)
        key = getattr(thread_state, "key", None)
        if plugin is not None and hasattr(plugin, "add_chunk"):
            ts = worker.state.tasks.get(key) if key is not None else None
            return worker, plugin, key, getattr(ts, "span_id", None)
    annotation = dask.get_annotations().get("span")
    ids = annotation.get("ids") if isinstance(annotation, dict) else None
    return worker, None, key, str(ids[-1]) if ids else None


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
    ``time.perf_counter``), thread CPU time, process RSS (psutil) and the
    bytes the file source was asked for; from ``events.metadata``: dataset,
    file, uuid, tree, entry range; from coffea's access log: the branches
    read, and from the file's TBranch metadata their compressed and
    uncompressed bytes in the baskets of this entry range. On a Dask worker
    the plugin adds the whole task's time and bytes when the task ends.
    Exceptions of ``func`` are re-raised after the record (with ``error``)
    is sent.
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
    try:
        measure = _Measure(events)
        token = _ACTIVE.set(measure.chunk)
    except Exception as exc:  # never let the instrumentation break the task
        _COUNTERS.add("instrument_errors", exc)
        return func(self, events, *args, **kwargs)
    _COUNTERS.add("chunks")
    try:
        result = func(self, events, *args, **kwargs)
    except BaseException as exc:
        _ACTIVE.reset(token)
        _COUNTERS.add("chunk_errors")
        measure.finish(exc)
        raise
    _ACTIVE.reset(token)
    measure.finish(None)
    return result


# --- sections --------------------------------------------------------------------


@contextmanager
def track_time(processor_self: Any, section_name: str) -> Iterator[None]:
    """Add the wall time of a block to the chunk's ``timing[section_name]``.

    Parameters
    ----------
    processor_self : ProcessorABC
        The processor (kept for compatibility with roastcoffea 0.1.2; not used
        or modified).
    section_name : str
        The section; repeated names within one chunk add up, and
        ``section_counts["timing"][section_name]`` counts the blocks.

    Yields
    ------
    None

    Raises
    ------
    TypeError
        If ``section_name`` is not a str.

    Notes
    -----
    Seconds of ``time.perf_counter``, recorded also when the block raises.
    Outside a ``@track_metrics`` call it does nothing.
    """
    name = _section_name(section_name)
    chunk = _ACTIVE.get()
    if chunk is None:
        yield
        return
    start = time.perf_counter()
    try:
        yield
    finally:
        chunk.add("timing", name, time.perf_counter() - start)


#: Alias of :func:`track_time` (the name of the 0.1 development series).
track_section = track_time


@contextmanager
def track_memory(processor_self: Any, section_name: str) -> Iterator[None]:
    """Add the change of process RSS over a block to ``memory[section_name]``.

    Parameters
    ----------
    processor_self : ProcessorABC
        The processor (not used or modified).
    section_name : str
        The section; repeated names within one chunk add up their deltas.

    Yields
    ------
    None

    Raises
    ------
    TypeError
        If ``section_name`` is not a str.

    Notes
    -----
    MiB of resident set size (psutil); None when psutil is missing or fails.
    Outside a ``@track_metrics`` call it does nothing.
    """
    name = _section_name(section_name)
    chunk = _ACTIVE.get()
    if chunk is None:
        yield
        return
    before = _safe_rss()
    try:
        yield
    finally:
        after = _safe_rss()
        chunk.add("memory", name, None if before is None or after is None else after - before)


def _safe_rss() -> float | None:
    try:
        return _rss()
    except Exception as exc:
        _COUNTERS.add("instrument_errors", exc)
        return None


@contextmanager
def track_bytes(processor_self: Any, events: Any, section_name: str) -> Iterator[None]:
    """Add the bytes read from the file over a block to ``bytes[section_name]``.

    Parameters
    ----------
    processor_self : ProcessorABC
        The processor (not used or modified).
    events : awkward.Array
        NanoEvents of the chunk, whose file source is watched; when they do
        not lead to one, the chunk's own file source is used.
    section_name : str
        The section; repeated names within one chunk add up.

    Yields
    ------
    None

    Raises
    ------
    TypeError
        If ``section_name`` is not a str.

    Notes
    -----
    The change of uproot's ``source.num_requested_bytes``; None when no
    source is reachable. Outside a ``@track_metrics`` call it does nothing.
    """
    name = _section_name(section_name)
    chunk = _ACTIVE.get()
    if chunk is None:
        yield
        return
    try:
        source = _events_source(events)
    except Exception:
        source = chunk.source
    before = None if source is None else source.num_requested_bytes
    try:
        yield
    finally:
        after = None if source is None else source.num_requested_bytes
        chunk.add("bytes", name, None if before is None or after is None else after - before)


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

    def __enter__(self) -> BaseInstrumentationContext:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        return None

    @property
    def active(self) -> bool:
        """Whether a ``@track_metrics`` call is active in this thread/context."""
        return _ACTIVE.get() is not None

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
        chunk = _ACTIVE.get()
        if chunk is None:
            return False
        previous = chunk.custom.get(name)
        if _is_number(value) and _is_number(previous):
            chunk.custom[name] = previous + value
        else:
            chunk.custom[name] = value
        return True


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
