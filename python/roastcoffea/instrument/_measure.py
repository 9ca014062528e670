"""One decorated call's measurement: start values, end values, the record handed on."""

from __future__ import annotations

import time
from typing import Any

from roastcoffea.instrument._baskets import FILES_SEEN, TREE_INDEXES
from roastcoffea.instrument._chunk import Chunk, rss
from roastcoffea.instrument._coffea import (
    factory,
    file_handle,
    file_source,
    file_uuid,
    open_tree_of,
)
from roastcoffea.instrument._counters import COUNTERS, Unavailable, describe
from roastcoffea.instrument._pages import PageIndex
from roastcoffea.instrument.phases import current as current_clock
from roastcoffea.instrument.running import running_task
from roastcoffea.records import RECORD_VERSION, queue_local


class Measure:
    """Start values of one decorated call, and the record being built."""

    __slots__ = (
        "bytes0",
        "chunk",
        "cpu0",
        "events",
        "factory",
        "log_start",
        "mem0",
        "own_cpu",
        "own_wall",
        "perf0",
        "record",
        "unavailable",
    )

    def __init__(self, events: Any) -> None:
        own_wall, own_cpu = time.perf_counter(), time.thread_time()
        self.events = events
        self.unavailable: dict[str, str] = {}
        self.record: dict[str, Any] = {"kind": "chunk", "v": RECORD_VERSION}
        self.factory: Any = None
        self.log_start = 0
        self.bytes0: int | None = None
        source = None
        self._metadata()
        try:
            self.factory = factory(events)
            source = file_source(file_handle(self.factory))
            self.bytes0 = source.num_requested_bytes
            self.record["open_bytes"] = self.bytes0
            self.record["open_requests"] = source.num_requests
        except Exception as exc:
            self._lost(("bytes_read", "open_bytes", "open_requests"), exc)
            self.record["open_bytes"] = self.record["open_requests"] = None
        log = getattr(self.factory, "access_log", None)
        self.log_start = len(log) if isinstance(log, list) else 0
        self.chunk = Chunk(source)
        self.mem0 = self._memory("mem_before_mib")
        self.record["t_start"] = time.time()
        self.cpu0 = time.thread_time()
        self.perf0 = time.perf_counter()
        self.own_wall, self.own_cpu = self.perf0 - own_wall, self.cpu0 - own_cpu

    def _lost(self, keys: str | tuple[str, ...], exc: BaseException) -> None:
        """Note why ``keys`` are unmeasurable; an unexpected failure is counted once."""
        reason = str(exc) if isinstance(exc, Unavailable) else describe(exc)
        for key in (keys,) if isinstance(keys, str) else keys:
            self.unavailable[key] = reason
        if not isinstance(exc, Unavailable):
            COUNTERS.add("instrument_errors", exc)

    def _memory(self, key: str) -> float | None:
        try:
            value = rss()
        except Exception as exc:
            self._lost(key, exc)
            return None
        if value is None:
            self.unavailable[key] = "no /proc/<pid>/statm and psutil is not installed"
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
        record["uuid"] = file_uuid(meta.get("fileuuid"))
        if record["uuid"] is None:
            self.unavailable["uuid"] = "events.metadata has no 'fileuuid'"

    def finish(self, error: BaseException | None) -> None:
        """Take the end values, derive the rest, hand the record on. Never raises."""
        try:
            self._finish(error)
        except Exception as exc:  # a bug here must not reach the user's task
            COUNTERS.add("instrument_errors", exc)

    def _finish(self, error: BaseException | None) -> None:
        perf1 = time.perf_counter()
        cpu1 = time.thread_time()
        record = self.record
        record["t_end"] = time.time()
        record["duration"] = perf1 - self.perf0
        record["process_cpu_seconds"] = cpu1 - self.cpu0
        mem1 = self._memory("mem_after_mib")
        source = self.chunk.source
        bytes1 = source.num_requested_bytes if source is not None else None
        record["mem_before_mib"] = self.mem0
        record["mem_after_mib"] = mem1
        record["mem_delta_mib"] = None if self.mem0 is None or mem1 is None else mem1 - self.mem0
        if self.mem0 is None or mem1 is None:
            self.unavailable["mem_delta_mib"] = "RSS not measured"
        record["bytes_read"] = None if bytes1 is None else bytes1 - self.bytes0
        record["error"] = None if error is None else describe(error)

        task = running_task()
        plugin, span = task.plugin, task.span
        own_bytes = self._files(task.worker, span, source)
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
        # The instrumentation's own time, up to the hand-off below.
        record["instrument_seconds"] = self.own_wall + time.perf_counter() - perf1
        record["instrument_cpu_seconds"] = self.own_cpu + time.thread_time() - cpu1
        if plugin is not None:
            plugin.add_chunk(task.key, record, source, own_bytes)
            COUNTERS.add("records_to_worker")
            return
        record.update(task_key=None, prefix=None, worker=None, span=span)
        for field in (
            "task_start",
            "task_end",
            "task_duration",
            "bytes_read_task",
            "read_requests_task",
            "read_ranges_task",
        ):
            record[field] = None
            self.unavailable[field] = "not run in a Dask task with the roastcoffea worker plugin"
        if queue_local(record):
            COUNTERS.add("records_local")
        else:
            COUNTERS.add("records_local_refused")

    def _files(self, worker: str | None, span: str | None, source: Any) -> int:
        """Branch, byte and file fields; returns the bytes this itself requested."""
        record = self.record
        branch_keys = (
            "accessed_branches",
            "num_branches_accessed",
            "branches_read_percent",
            "accessed_bytes",
            "accessed_uncompressed_bytes",
            "accessed_used_bytes",
            "accessed_unit_entries",
            "accessed_embedded_bytes",
            "accessed_baskets",
            "bytes_read_percent",
            "storage_unit",
        )
        for key in (*branch_keys, "file_metadata"):
            record[key] = None
        try:
            log = getattr(self.factory, "access_log", None)
            if not isinstance(log, list):
                raise Unavailable("the events factory has no access_log")
            names = list(dict.fromkeys(entry.branch for entry in log[self.log_start :]))
            record["accessed_branches"] = names
            record["num_branches_accessed"] = len(names)
        except Exception as exc:
            self._lost(branch_keys, exc)
            record["instrument_requests"] = record["instrument_ranges"] = (
                0 if source is not None else None
            )
            return 0
        before = source.num_requested_bytes if source is not None else 0
        requests = source.num_requests if source is not None else 0
        ranges = source.num_requested_chunks if source is not None else 0
        try:
            handle = file_handle(self.factory)
            treename, start, stop = record["treename"], record["entry_start"], record["entry_stop"]
            if treename is None or start is None or stop is None:
                raise Unavailable("events.metadata lacks the tree name or the entry range")
            if source is None:
                raise Unavailable("no file source with num_requested_bytes")
            file_key = record["uuid"] or str(getattr(handle, "file", handle).uuid)
            index = TREE_INDEXES.get(file_key, treename, lambda: open_tree_of(handle, treename))
            branches = len(index.branches)
            if branches:
                record["branches_read_percent"] = 100.0 * len(names) / branches
            file = getattr(handle, "file", handle)
            if isinstance(index, PageIndex):
                record.update(index.record_fields(self.chunk.pages_of(file), start, stop))
                in_range, unit = index.in_range(start, stop), "pages"
            else:
                baskets, in_range = index.chunk_baskets(names, start, stop)
                record.update(
                    index.record_fields(baskets, (start, stop), source, _parsed_baskets(file))
                )
                unit = "baskets"
            if in_range > 0:
                record["bytes_read_percent"] = 100.0 * record["accessed_bytes"] / in_range
            else:
                self.unavailable["bytes_read_percent"] = f"the entry range holds no {unit}"
            if FILES_SEEN.first((worker, span, file_key, treename)):
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
        record["instrument_requests"] = source.num_requests - requests if source else None
        record["instrument_ranges"] = source.num_requested_chunks - ranges if source else None
        return after - before


def _parsed_baskets(file: Any) -> dict[int, tuple[int, int]]:
    """``{seek: (fNbytes, fObjlen + fKeylen)}`` of the baskets of ``file`` the task parsed.

    Takes the thread's task's basket log (:meth:`TaskPhases.take_baskets`), so it
    holds one chunk's baskets at most; empty outside a measured task.
    """
    clock = current_clock()
    return {} if clock is None else clock.take_baskets(file)
