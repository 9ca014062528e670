"""Chunk, processor-prefix and phase records: the format, and the process-local store.

A *record* is a msgpack map of plain values (str, int, float, bool, None,
bytes, lists and maps of those) that the instrumentation sends through the
plugin: :func:`roastcoffea.track_metrics` makes one ``kind="chunk"`` record
per call of ``process()``, and :class:`~roastcoffea.plugin.RoastWorkerPlugin`
makes one ``kind="prefix"`` record per (worker, task prefix, span) whose tasks
run a coffea ``WorkItem``. The worker plugin sends a task's records in one
message on its event stream, ahead of the message that the task finished
(``RoastWorkerPlugin.queue_record`` sends one record); they come back in every
snapshot as ``snapshot["records"]`` (``{"worker", "seq", "time", "data"}``
each), where :func:`decode_records` turns them into dicts and
:func:`records_by_kind` sorts them.

Chunk record (``kind="chunk"``, ``v=1``). Every value that could not be
measured is None, never 0, and ``unavailable[key]`` says why.

========================  =====================================================
key                       value and how it is measured
========================  =====================================================
task_key, prefix          the Dask task that ran ``process()``, its key_split
worker, span              worker address; the task's span on the worker
                          (``worker.state.tasks[key].span_id``). Outside a
                          worker: None, and the caller's ``distributed.span``
dataset, file, treename,  ``events.metadata`` (coffea's ``dataset``,
entry_start, entry_stop   ``filename``, ``treename``, ``entrystart``,
                          ``entrystop``)
uuid                      coffea's ``fileuuid`` as a canonical UUID string
num_events                ``len(events)``
t_start, t_end            ``time.time()`` just around ``process()``, moved to
                          the scheduler clock by the ``scheduler_delay`` Dask
                          stamped the task's ``startstops`` with, when the
                          worker plugin completes the record
duration                  ``time.perf_counter()`` seconds of ``process()``
process_cpu_seconds       ``time.thread_time()`` seconds of ``process()``
task_start, task_end,     the task's last "compute" entry in the worker's
task_duration             ``TaskState.startstops`` (worker clock): the whole
                          task (processor unpickling, file open, NanoEvents
                          factory, ``process()``, output compression)
mem_before_mib,           process RSS (psutil) in MiB before / after
mem_after_mib,            ``process()``, and the difference
mem_delta_mib
bytes_read                change of the file source's ``num_requested_bytes``
                          over ``process()``
bytes_read_task           the source's ``num_requested_bytes`` when the task
                          left "executing" (file open included), minus
                          ``instrument_bytes``; coffea's ``bytesread`` equals
                          Σ (bytes_read_task + instrument_bytes)
open_bytes, open_requests the source's ``num_requested_bytes`` and
                          ``num_requests`` when ``process()`` starts: opening
                          the file and reading its tree's metadata (coffea
                          opens the file again for every chunk)
read_requests_task,       the source's ``num_requests`` and
read_ranges_task          ``num_requested_chunks`` (byte ranges) when the task
                          left "executing", less the instrumentation's own
instrument_requests,      the requests and byte ranges the instrumentation
instrument_ranges         itself made (its basket headers; 0 or 1 request)
instrument_bytes          bytes the instrumentation itself requested from the
                          file: 16-byte TKey headers of the accessed baskets
                          whose sizes are not known in this process (one
                          vectored request per chunk; none in a task of the
                          worker plugin, which logs the TKeys uproot parsed)
                          and, once per tree and process, the tree's key
instrument_seconds,       ``time.perf_counter()`` / ``time.thread_time()``
instrument_cpu_seconds    seconds of the instrumentation's own work in this
                          chunk: before ``process()`` and after it, up to the
                          hand-off of the record
accessed_branches,        distinct branches in coffea's ``access_log`` during
num_branches_accessed     ``process()``, in first-access order
accessed_bytes            Σ compressed size (TKey included, ``fBasketBytes``)
                          of the accessed branches' baskets overlapping
                          ``[entry_start, entry_stop)``
accessed_uncompressed_    Σ ``fObjlen + fKeylen`` of the same baskets (as
bytes                     uproot's ``basket_uncompressed_bytes``); for a
                          basket embedded in the TTree metadata, the bytes it
                          holds (``fLast``, plus the counted entry offsets of
                          a jagged branch), not its buffer's capacity
accessed_used_bytes       the part of ``accessed_uncompressed_bytes`` that
                          holds the chunk's entries: each basket's bytes
                          spread evenly over its entries (a page's over its
                          cluster's: uproot reads an RNTuple a cluster at a
                          time), those in ``[entry_start, entry_stop)`` summed
accessed_unit_entries     the mean entries per basket of those baskets (per
                          cluster of those pages)
accessed_embedded_bytes   the part of ``accessed_uncompressed_bytes`` in
                          embedded baskets (they have no compressed size)
accessed_baskets          ``{id, compressed, uncompressed}``: parallel lists
                          of those baskets, ``id`` the basket's seek in the
                          file, or ``-(n + 1)`` for the tree's embedded basket
                          ``n``; a file's baskets count once per file
storage_unit              ``"basket"`` (a TTree) or ``"page"`` (an RNTuple): on
                          an RNTuple the four fields above are the pages
                          ``process()`` read (uproot's ``read_page``), by
                          their locator's offset: stored bytes, and the bytes
                          uproot decompresses each to (elements * bit width)
branches_read_percent     100 * accessed branches / branches of the tree (the
                          top-level fields of an RNTuple)
bytes_read_percent        100 * accessed_bytes / compressed bytes of all the
                          tree's baskets overlapping the entry range (of every
                          column's pages in the clusters overlapping it)
file_metadata             ``{filename, compression_ratio, total_branches,
                          total_tree_bytes}`` on the first chunk of a file per
                          (worker process, span); None on the others
timing, memory, bytes     ``{section: total}`` of :func:`~roastcoffea.track_time`
                          (seconds), :func:`~roastcoffea.track_memory` (MiB of
                          RSS), :func:`~roastcoffea.track_bytes` (bytes);
                          repeated names add up, None when unmeasurable
section_counts            ``{"timing"|"memory"|"bytes": {section: blocks}}``
custom                    ``{name: value}`` from
                          ``BaseInstrumentationContext.record_metric``
error                     None, or ``"ExcType: message"`` when ``process()``
                          raised (the exception is re-raised to the caller)
unavailable               ``{key: reason}`` for the None values above
timestamp                 ``time.time()`` when the record was assembled
========================  =====================================================

Prefix record (``kind="prefix"``, ``v=1``): ``prefix, task_key, worker,
span`` of the first task of a (worker, prefix, span) whose arguments hold a
coffea ``WorkItem``: the processor tasks, whatever coffea named them.

Phase record (``kind="phases"``, ``v=1``): one per task the worker plugin's
phase clock measured (:mod:`roastcoffea.plugin.worker.phases`): ``task_key, prefix,
worker, span``, the work item's ``dataset, file, entry_start, entry_stop``,
the worker ``thread``, ``t_start`` and ``t_stop`` (the task's "compute" start and
stop in Dask's ``startstops``, scheduler clock; ``t_stop`` None when the worker did
not observe the task's end), ``elapsed`` (s, by the phase clock), ``wall`` and
``cpu`` (``{phase: seconds}``, ``output`` None when coffea's compression is off),
``read_bytes``, ``codecs`` (``{codec: [wall, cpu, bytes in, bytes out]}``) and
``helpers`` (None, or ``{"runs", "wall", "cpu"}``: the task's work on uproot's executor
pools, ``{phase: seconds}`` beside its own).
docs/metrics.md, "Processor phases", says what each phase covers.

Lost record (``kind="lost"``, ``v=1``): sent by the worker plugin in place of a
record it could not send (``reason``: the record did not encode, or the plugin
failed while taking it): ``lost`` (the kind of the record lost), ``reason``,
``worker, span``. A collector counts them per reason (``monitoring.records_lost``).

When ``process()`` runs where no roastcoffea worker plugin is reachable (for
example coffea's iterative or futures executor in the client process), the
records go to a bounded store in that process instead; a collector takes its
own with :func:`drain_local_records`.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable
from typing import Any, NamedTuple

import msgpack
import numpy

from roastcoffea.errors import DecodeError

#: Version of the record maps this module writes and reads.
RECORD_VERSION = 1

#: Record kinds this module knows.
KINDS = ("chunk", "prefix", "phases", "lost")

#: Bytes of encoded records the process-local store holds at most.
LOCAL_RECORD_CAP_BYTES = 16 << 20


def _plain(value: Any) -> Any:
    """msgpack ``default``: NumPy scalars become Python values, anything else fails."""
    if isinstance(value, numpy.generic):
        converted = value.item()
        if isinstance(converted, (bool, int, float, str, bytes)):
            return converted
    raise TypeError(f"record values must be plain data, not {type(value).__name__}")


class _Packer(threading.local):
    """Each thread's msgpack packer, its buffer kept from one record to the next.

    ``msgpack.packb`` makes a packer per call with a 256 KiB buffer; a Dask worker's
    glibc (``MALLOC_TRIM_THRESHOLD_``, set by the nanny) maps and unmaps that at
    every record: two system calls and a page fault in the encoding thread (the
    worker's event loop). A record is a few KiB; the buffer grows if one is larger.
    """

    def __init__(self) -> None:
        self.pack = msgpack.Packer(use_bin_type=True, default=_plain, buf_size=16 * 1024).pack


_packer = _Packer()


def encode_record(record: dict[str, Any]) -> bytes:
    """Encode a record as msgpack bytes.

    Parameters
    ----------
    record : dict
        A map with str keys and plain values. NumPy scalars are converted to
        Python numbers; tuples are written as arrays (they decode as lists).

    Returns
    -------
    bytes

    Raises
    ------
    TypeError
        If ``record`` is not a dict or holds a value msgpack cannot write.
    """
    if not isinstance(record, dict):
        raise TypeError(f"a record is a dict, not {type(record).__name__}")
    return _packer.pack(record)


def decode_record(data: object) -> dict[str, Any]:
    """Decode one record written by :func:`encode_record`.

    Parameters
    ----------
    data : bytes
        One record's msgpack bytes.

    Returns
    -------
    dict

    Raises
    ------
    ValueError
        If ``data`` is not one msgpack map with ``kind`` in :data:`KINDS` and
        ``v`` equal to :data:`RECORD_VERSION`.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ValueError(f"record data must be bytes, not {type(data).__name__}")
    try:
        record = msgpack.unpackb(bytes(data), raw=False, use_list=True, strict_map_key=True)
    except Exception as exc:  # msgpack raises several unrelated types
        raise DecodeError(f"record is not valid msgpack: {exc}") from None
    if not isinstance(record, dict):
        raise ValueError(f"record is a {type(record).__name__}, not a map")
    kind = record.get("kind")
    if kind not in KINDS:
        raise ValueError(f"record kind {kind!r} is not one of {KINDS}")
    version = record.get("v")
    if version != RECORD_VERSION:
        raise ValueError(f"record version {version!r}; this reader knows {RECORD_VERSION}")
    return record


class RecordList(list):
    """A list of decoded records that also says how many were skipped.

    Attributes
    ----------
    skipped : int
        Entries that were not decodable records (malformed, unknown kind or a
        newer version).
    reasons : dict[str, int]
        Skipped entries by the first line of their error message.
    """

    def __init__(self, records: Iterable[dict[str, Any]] = ()) -> None:
        super().__init__(records)
        self.skipped = 0
        self.reasons: dict[str, int] = {}

    def skip(self, reason: str) -> None:
        """Count one skipped entry."""
        self.skipped += 1
        self.reasons[reason] = self.reasons.get(reason, 0) + 1


def decode_records(snapshot_records: Iterable[Any]) -> RecordList:
    """Decode the ``"records"`` of a snapshot.

    Parameters
    ----------
    snapshot_records : iterable
        ``snapshot["records"]``: dicts with the record bytes under ``"data"``
        (bare bytes are accepted too).

    Returns
    -------
    RecordList
        The decoded records in snapshot order; entries that do not decode are
        left out and counted in ``.skipped`` (never raised).
    """
    out = RecordList()
    for entry in snapshot_records:
        data = entry.get("data") if isinstance(entry, dict) else entry
        try:
            out.append(decode_record(data))
        except ValueError as exc:
            out.skip(str(exc).split(":", 1)[0])
    return out


def lost_record(kind: Any, reason: str, worker: Any, span: Any) -> dict[str, Any]:
    """The record sent in place of a record of ``kind`` that could not be sent.

    Only str or None values from the plugin itself, so it always encodes.
    """
    return {
        "kind": "lost",
        "v": RECORD_VERSION,
        "lost": kind if kind in KINDS else "unknown",
        "reason": reason,
        "worker": worker if isinstance(worker, str) else None,
        "span": span if isinstance(span, str) else None,
    }


class RecordsByKind(NamedTuple):
    """Records by kind (see :func:`records_by_kind`)."""

    chunks: list[dict[str, Any]]
    prefixes: set[str]
    phases: list[dict[str, Any]]
    lost: dict[str, int]


def records_by_kind(records: Iterable[dict[str, Any]]) -> RecordsByKind:
    """Sort decoded records by kind.

    Parameters
    ----------
    records : iterable of dict
        Decoded records (:func:`decode_records`, :func:`drain_local_records`): those of
        a snapshot are its span's already (the scheduler filters them).

    Returns
    -------
    RecordsByKind
        ``chunks``: the chunk records, in input order; ``prefixes``: the ``prefix`` of
        every prefix record (the task prefixes that ran coffea work items; chunk
        records' own ``prefix`` values are not included); ``phases``: the phase
        records, in input order; ``lost``: ``{"<kind>: <reason>": count}`` of the
        records the workers could not send (lost records).
    """
    selected = RecordsByKind([], set(), [], {})
    for record in records:
        kind = record.get("kind")
        if kind == "chunk":
            selected.chunks.append(record)
        elif kind == "phases":
            selected.phases.append(record)
        elif kind == "prefix" and isinstance(record.get("prefix"), str):
            selected.prefixes.add(record["prefix"])
        elif kind == "lost":
            what = f"{record.get('lost')}: {record.get('reason')}"
            selected.lost[what] = selected.lost.get(what, 0) + 1
    return selected


class _LocalStore:
    """Encoded records made in this process without a worker plugin.

    Bounded by :data:`LOCAL_RECORD_CAP_BYTES`; a record that does not fit is
    refused and counted, like the worker's record queue.
    """

    def __init__(self, cap_bytes: int) -> None:
        self.cap_bytes = cap_bytes
        self._lock = threading.Lock()
        self._items: deque[tuple[str | None, bytes]] = deque()
        self._bytes = 0
        self.queued = 0
        self.refused = 0

    def put(self, span: str | None, data: bytes) -> bool:
        with self._lock:
            if self._bytes + len(data) > self.cap_bytes:
                self.refused += 1
                return False
            self._items.append((span, data))
            self._bytes += len(data)
            self.queued += 1
            return True

    def take(self, span_ids: set[str] | None) -> list[bytes]:
        with self._lock:
            taken: list[bytes] = []
            kept: deque[tuple[str | None, bytes]] = deque()
            for span, data in self._items:
                if span_ids is None or span in span_ids:
                    taken.append(data)
                else:
                    kept.append((span, data))
            self._items = kept
            self._bytes = sum(len(data) for _, data in kept)
            return taken

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {
                "records": len(self._items),
                "bytes": self._bytes,
                "cap_bytes": self.cap_bytes,
                "queued": self.queued,
                "refused": self.refused,
            }


_LOCAL = _LocalStore(LOCAL_RECORD_CAP_BYTES)


def queue_local(record: dict[str, Any]) -> bool:
    """Keep a record in this process's store (no worker plugin reachable).

    Parameters
    ----------
    record : dict
        A record; its ``span`` decides which collector drains it.

    Returns
    -------
    bool
        False when the store is full and the record was refused (counted in
        :func:`local_record_stats`).

    Raises
    ------
    TypeError
        If the record holds a value :func:`encode_record` cannot write.
    """
    span = record.get("span")
    return _LOCAL.put(span if isinstance(span, str) else None, encode_record(record))


def drain_local_records(span_ids: set[str] | None = None) -> list[dict[str, Any]]:
    """Take this process's stored records out of the store.

    Parameters
    ----------
    span_ids : set of str, optional
        Take only records made inside these Dask spans (a collector passes its
        own span); records of other spans stay. None takes everything.

    Returns
    -------
    list of dict
        The records, oldest first.
    """
    return [decode_record(data) for data in _LOCAL.take(span_ids)]


def local_record_stats() -> dict[str, int]:
    """Counters of the process-local store.

    Returns
    -------
    dict
        ``records`` and ``bytes`` held now, ``cap_bytes``, and the totals
        ``queued`` and ``refused`` since the process started.
    """
    return _LOCAL.stats()
