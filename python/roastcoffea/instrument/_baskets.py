"""ROOT basket accounting: which baskets a chunk's entry range read, and their sizes.

The sizes come from the TBranch metadata (fBasketBytes, fBasketSeek,
fBasketEntry) and, for uncompressed sizes, from each basket's TKey header: as
uproot parsed it while reading the chunk (logged by the phase hooks), else read
from the file; nothing is decompressed.
"""

from __future__ import annotations

import bisect
import queue
import struct
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy

from roastcoffea.instrument._counters import COUNTERS
from roastcoffea.instrument._pages import PageIndex, is_rntuple, overlap

#: Memory the basket indexes of recently read trees may use per process.
MAX_TREE_INDEX_BYTES = 64 << 20
#: (worker, span, file, tree) combinations remembered as having sent their
#: ``file_metadata``; when full the memory is cleared and counted.
MAX_FILES_SEEN = 65536
#: Sets of branches per tree whose baskets are remembered (an analysis reads
#: the same few sets chunk after chunk); when full the memory is cleared.
MAX_BRANCH_SETS = 16
#: Groups of shared basket boundaries a tree's range sums search one by one on lists;
#: beyond, in one array (:class:`RangeBytes`).
LISTED_GROUPS = 8
#: ROOT TKey header: fNbytes, fVersion, fObjlen, fDatime, fKeylen (big-endian).
TKEY_HEAD = struct.Struct(">ihiIh")


class TreeIndex:
    """Every basket of a tree as flat arrays, for per-chunk byte sums.

    Built once per (file, tree) and process (walking the 1,500 branches of a
    CMS NanoAOD file costs about 10 ms, against 0.4-0.6 s for coffea to open
    it for each chunk; a chunk's sums then cost microseconds).
    Basket ``i`` holds entries ``[starts[i], stops[i])`` in ``compressed[i]``
    bytes (TKey included); ``seeks[i]`` is its file position, or -1 for an
    embedded basket. ``uncompressed[i]`` is its fObjlen + fKeylen: known from
    the start for an embedded basket, taken from a normal basket's TKey the
    first time a chunk needs it (0 until then): the TKey uproot parsed in the
    chunk's task when the phase hooks logged it, else read from the file, so
    a header is read at most once per process.
    A basket's identity in a record is its seek (unique in the file), or
    ``-(i + 1)`` for an embedded one (unique in the tree). ``nbytes`` bounds
    the index's memory, its remembered branch sets included.
    """

    __slots__ = (
        "_branch_sets",
        "_range_bytes",
        "branches",
        "compressed",
        "nbytes",
        "seeks",
        "starts",
        "stops",
        "tree_compressed",
        "tree_uncompressed",
        "uncompressed",
    )

    def __init__(self, tree: Any) -> None:
        self.branches: dict[str, tuple[int, int]] = {}
        fields: tuple[list[Any], ...] = ([], [], [], [])  # starts, stops, compressed, seeks
        embedded: dict[int, int] = {}  # position: uncompressed size
        position = 0
        for name, branch in _walk(tree):
            count = _add_baskets(branch, position, fields, embedded)
            self.branches[name] = (position, position + count)
            position += count
        self.starts, self.stops, self.compressed, self.seeks = (
            numpy.concatenate(field, dtype=numpy.int64) if field else numpy.zeros(0, numpy.int64)
            for field in fields
        )
        self.uncompressed = numpy.zeros(position, numpy.int64)
        self.uncompressed[list(embedded)] = list(embedded.values())
        joined = (self.starts, self.stops, self.compressed, self.seeks, self.uncompressed)
        self.tree_compressed = int(tree.compressed_bytes)
        self.tree_uncompressed = int(tree.uncompressed_bytes)
        self._branch_sets: dict[tuple[str, ...], numpy.ndarray] = {}
        self._range_bytes = RangeBytes(
            self.starts, self.stops, self.compressed, self.seeks, self.branches.values()
        )
        arrays = sum(array.nbytes for array in joined) + self._range_bytes.nbytes
        self.nbytes = arrays + MAX_BRANCH_SETS * 8 * len(self.starts) + 128 * len(self.branches)

    def chunk_baskets(self, names: list[str], start: int, stop: int) -> tuple[numpy.ndarray, int]:
        """The baskets of ``names`` overlapping ``[start, stop)``, and the range's size.

        Returns
        -------
        baskets : numpy.ndarray
            Their positions in the index, normal ones in file order, then embedded ones.
        in_range : int
            Compressed bytes of the baskets of every branch overlapping the range.

        Raises
        ------
        KeyError
            For a name that is not a branch of the tree.
        """
        baskets = self._baskets_of(tuple(names))
        overlap = (self.starts[baskets] < stop) & (self.stops[baskets] > start)
        return baskets[overlap], self._range_bytes(start, stop)

    def _baskets_of(self, names: tuple[str, ...]) -> numpy.ndarray:
        """Every basket of ``names``: normal ones in file order, then embedded ones."""
        baskets = self._branch_sets.get(names)
        if baskets is not None:
            return baskets
        parts = [numpy.arange(*self.branches[name]) for name in names]
        chosen = numpy.unique(numpy.concatenate(parts)) if parts else numpy.zeros(0, numpy.int64)
        seeks = self.seeks[chosen]
        normal = chosen[seeks >= 0]
        normal = normal[numpy.argsort(self.seeks[normal], kind="stable")]
        baskets = numpy.concatenate([normal, chosen[seeks < 0]])
        if len(self._branch_sets) >= MAX_BRANCH_SETS:
            self._branch_sets.clear()
        self._branch_sets[names] = baskets
        return baskets

    def record_fields(
        self,
        baskets: numpy.ndarray,
        entries: tuple[int, int],
        source: Any,
        parsed: dict[int, tuple[int, int]] | None = None,
    ) -> dict[str, Any]:
        """The record's byte fields of ``baskets`` read for the ``entries`` ``[start, stop)``;
        learns the sizes not known before.

        ``parsed`` maps a basket's seek to the ``(fNbytes, fObjlen + fKeylen)`` of the
        TKey uproot parsed in the chunk's task; the sizes it lacks are read from the
        file (the TKeys in one request).

        Raises
        ------
        ValueError
            If a header read does not match its basket.
        """
        uncompressed = self.uncompressed[baskets]
        seeks = self.seeks[baskets]
        unknown = baskets[(uncompressed == 0) & (seeks >= 0)]  # an embedded size is known
        if len(unknown):
            self._learn(unknown, source, parsed or {})
            uncompressed = self.uncompressed[baskets]
        # Plain lists from here: a chunk reads tens of baskets, too few for numpy to pay.
        sizes_out = uncompressed.tolist()
        seeks_out = seeks.tolist()
        normal = len(seeks_out) - seeks_out.count(-1)  # normal baskets come first
        compressed = self.compressed[baskets[:normal]].tolist()
        embedded = len(seeks_out) - normal
        firsts, lasts = self.starts[baskets].tolist(), self.stops[baskets].tolist()
        start, stop = entries
        used = sum(
            size * overlap(first, last, start, stop)
            for size, first, last in zip(sizes_out, firsts, lasts, strict=True)
        )
        return {
            "storage_unit": "basket",
            "accessed_bytes": sum(compressed),
            "accessed_uncompressed_bytes": sum(sizes_out),
            "accessed_used_bytes": round(used),
            "accessed_unit_entries": (sum(lasts) - sum(firsts)) / len(firsts) if firsts else None,
            "accessed_embedded_bytes": sum(sizes_out[normal:]),
            "accessed_baskets": {
                "id": seeks_out[:normal] + [-(b + 1) for b in baskets[normal:].tolist()],
                "compressed": compressed + [0] * embedded,
                "uncompressed": sizes_out,
            },
        }

    def _learn(
        self, unknown: numpy.ndarray, source: Any, parsed: dict[int, tuple[int, int]]
    ) -> None:
        """Sets the sizes of the normal baskets ``unknown``: parsed ones, then the rest read."""
        unread = []
        seeks, sizes = self.seeks[unknown].tolist(), self.compressed[unknown].tolist()
        for basket, seek, nbytes in zip(unknown.tolist(), seeks, sizes, strict=True):
            key = parsed.get(seek)
            if key is not None and key[0] == nbytes:
                self.uncompressed[basket] = key[1]
            else:
                unread.append(basket)
        if unread:
            self.uncompressed[unread] = uncompressed_from_keys(
                source, self.seeks[unread].tolist(), self.compressed[unread].tolist()
            )


class RangeBytes:
    """Compressed bytes of a tree's baskets overlapping an entry range, without a pass over
    every basket.

    A large NanoAOD tree holds 1,500 branches of up to hundreds of baskets each: a pass
    over 150,000 baskets costs 57 µs per chunk in a warm cache (600,000: 207 µs), more in
    a task's. But branches mostly share their basket boundaries (ROOT flushes a cluster's
    baskets together): their normal baskets are grouped by boundaries and summed per
    slot, so a range costs two binary searches per group, on plain lists (a few numpy
    calls cost more than that in a task's cold cache): 0.3-0.6 µs for one group at any
    size, 8-10 µs for 40 (measured; CHANGELOG.md, 0.2.0). Beyond :data:`LISTED_GROUPS`
    groups, each group's boundaries are offset by ``group * span`` in one sorted array,
    so one ``searchsorted`` covers every group. Baskets outside any group (embedded
    ones, boundaries out of order) are tested one by one.
    """

    __slots__ = ("_keyed", "_listed", "_loose", "_top")

    def __init__(
        self,
        starts: numpy.ndarray,
        stops: numpy.ndarray,
        compressed: numpy.ndarray,
        seeks: numpy.ndarray,
        branches: Iterable[tuple[int, int]],
    ) -> None:
        layouts, loose = _layouts(starts, stops, compressed, seeks, list(branches))
        self._top = max((int(bounds[-1]) for bounds, _ in layouts.values()), default=0)
        span = self._top + 3  # a query clamped to [-1, top + 1] stays in its group's keys
        if len(layouts) * span >= 1 << 62:  # the keys would overflow int64: test each basket
            loose, layouts = numpy.arange(len(starts)), {}
        self._loose = (starts[loose], stops[loose], compressed[loose]) if len(loose) else None
        groups = [(bounds, _prefix(sums)) for bounds, sums in layouts.values()]
        self._listed: list[tuple[list[int], list[int], list[int]]] = []
        self._keyed: tuple[numpy.ndarray, ...] | None = None
        if len(groups) <= LISTED_GROUPS:
            self._listed = [(b[:-1].tolist(), b[1:].tolist(), p.tolist()) for b, p in groups]
        else:
            offsets = numpy.arange(len(groups), dtype=numpy.int64) * span
            slots = numpy.cumsum([0, *(len(p) - 1 for _, p in groups[:-1])], dtype=numpy.int64)
            self._keyed = (
                offsets,
                _joined([b[:-1] + o for (b, _), o in zip(groups, offsets, strict=True)]),
                _joined([b[1:] + o for (b, _), o in zip(groups, offsets, strict=True)]),
                _joined([p for _, p in groups]),
                slots,
                slots + numpy.arange(len(groups)),  # where each group's prefix starts
            )

    @property
    def nbytes(self) -> int:
        """Memory of its arrays and lists (about 8 bytes a value in an array, 40 in a list)."""
        listed = sum(40 * (len(f) + len(s) + len(p)) for f, s, p in self._listed)
        arrays = (*(self._keyed or ()), *(self._loose or ()))
        return listed + sum(array.nbytes for array in arrays)

    def __call__(self, start: int, stop: int) -> int:
        """Σ compressed bytes of the baskets with ``starts < stop`` and ``stops > start``."""
        total = 0
        if self._loose is not None:
            starts, stops, compressed = self._loose
            total = int(compressed[(starts < stop) & (stops > start)].sum())
        # Per group, the slots from the first ending after start to the last starting before stop.
        for firsts, lasts, prefix in self._listed:
            first = bisect.bisect_right(lasts, start)
            last = max(bisect.bisect_left(firsts, stop), first)
            total += prefix[last] - prefix[first]
        if self._keyed is not None:
            total += _keyed_bytes(self._keyed, self._top, start, stop)
        return total


def _keyed_bytes(keyed: tuple[numpy.ndarray, ...], top: int, start: int, stop: int) -> int:
    """The groups' part of :meth:`RangeBytes.__call__`, every group searched at once."""
    offsets, firsts, lasts, prefix, slots, bases = keyed
    low = offsets + min(max(start, -1), top + 1)
    high = offsets + min(max(stop, -1), top + 1)
    first = numpy.searchsorted(lasts, low, side="right") - slots
    last = numpy.maximum(numpy.searchsorted(firsts, high, side="left") - slots, first)
    return int((prefix[bases + last] - prefix[bases + first]).sum())


def _prefix(sums: numpy.ndarray) -> numpy.ndarray:
    """``p[k] = sums[:k].sum()``, one longer than ``sums``."""
    return numpy.concatenate(([0], numpy.cumsum(sums))).astype(numpy.int64)


def _layouts(
    starts: numpy.ndarray,
    stops: numpy.ndarray,
    compressed: numpy.ndarray,
    seeks: numpy.ndarray,
    branches: list[tuple[int, int]],
) -> tuple[dict[bytes, tuple[numpy.ndarray, numpy.ndarray]], numpy.ndarray]:
    """The branches' normal baskets grouped by boundaries, ``{key: (bounds, sizes summed per
    slot)}``, and the positions of the baskets in no group.

    A branch joins a group when its normal baskets (first in its span) tile its entries from
    an entry >= 0: each ends where the next starts, none ends before it starts. The checks
    run on whole arrays; per branch only its key, a slice of the boundaries' bytes, is
    built: 0.5 ms for a CMS file's 1,500 branches, 3.3 ms for 150,000 baskets (a branch at
    a time in numpy, 11 ms for the 1,500).
    """
    count = len(starts)
    if not branches or not count:
        return {}, numpy.arange(count)
    lows, highs = (numpy.array(side, dtype=numpy.int64) for side in zip(*branches, strict=True))
    embedded = seeks < 0
    ends = lows + _between(~embedded, lows, highs)  # normal baskets come first
    breaks = numpy.zeros(count, dtype=bool)
    breaks[:-1] = stops[:-1] != starts[1:]
    last = numpy.maximum(ends - 1, lows)  # the pair after a branch's last basket is not its own
    chained = (
        (ends > lows)
        & (_between(stops < starts, lows, ends) == 0)
        & (_between(breaks, lows, last) == 0)
        & (starts[numpy.minimum(lows, count - 1)] >= 0)
    )
    starts_bytes, stops_bytes, width = starts.tobytes(), stops.tobytes(), starts.itemsize
    members: dict[bytes, list[int]] = {}
    for low, end in zip(lows[chained].tolist(), ends[chained].tolist(), strict=True):
        key = starts_bytes[low * width : end * width] + stops_bytes[(end - 1) * width : end * width]
        members.setdefault(key, []).append(low)
    layouts = {}
    for key, group in members.items():
        first = group[0]
        size = len(key) // width - 1
        bounds = numpy.append(starts[first : first + size], stops[first + size - 1])
        slots = numpy.add.outer(numpy.array(group), numpy.arange(size))
        layouts[key] = (bounds, compressed[slots].sum(axis=0, dtype=numpy.int64))
    loose = embedded.copy()
    for low, end in zip(lows[~chained].tolist(), ends[~chained].tolist(), strict=True):
        loose[low:end] = True
    return layouts, numpy.flatnonzero(loose)


def _between(flags: numpy.ndarray, lows: numpy.ndarray, highs: numpy.ndarray) -> numpy.ndarray:
    """How many of ``flags[low:high]`` are set, for each (low, high)."""
    counts = numpy.concatenate(([0], numpy.cumsum(flags, dtype=numpy.int64)))
    return counts[highs] - counts[lows]


def _joined(parts: list[numpy.ndarray]) -> numpy.ndarray:
    return numpy.concatenate(parts).astype(numpy.int64) if parts else numpy.zeros(0, numpy.int64)


def _embedded_size(basket: Any) -> int:
    """The bytes an embedded basket holds, counted as a stored basket's fObjlen + fKeylen.

    An embedded basket's fObjlen is its buffer's capacity, not its data. Its
    data ends at fLast (key included); a jagged branch's entry offsets follow
    as a counted array of fNevBuf + 1 ints, as ROOT writes them to a stored basket.
    """
    offsets = basket.byte_offsets
    return int(basket.member("fLast")) + (0 if offsets is None else 4 * (len(offsets) + 1))


def _walk(parent: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``(name, branch)`` of every branch under ``parent``, as uproot's ``iteritems()`` names them.

    (``iteritems`` costs several us per branch in its filters, and a NanoAOD tree has
    1,500 branches.)
    """
    for branch in parent.branches:
        name = prefix + branch.name
        yield name, branch
        if len(branch.branches):
            yield from _walk(branch, name + "/")


def _add_baskets(
    branch: Any, position: int, fields: tuple[list[Any], ...], embedded: dict[int, int]
) -> int:
    """Appends a branch's baskets to ``fields`` (starts, stops, compressed, seeks: arrays,
    or lists of ints for embedded baskets) and the sizes of its embedded ones to
    ``embedded``; returns how many baskets it has (normal ones first, as uproot numbers them).
    """
    starts, stops, compressed, seeks = fields
    members = branch._members  # TBranch's own (member() also searches the bases)
    extra = branch.embedded_baskets
    normal = branch.num_baskets - len(extra)
    entries = members["fBasketEntry"]
    starts.append(entries[:normal])
    stops.append(entries[1 : normal + 1])
    compressed.append(members["fBasketBytes"][:normal])
    seeks.append(members["fBasketSeek"][:normal])
    for number, basket in enumerate(extra, start=normal):
        first, last = branch.basket_entry_start_stop(number)
        starts.append([first])
        stops.append([last])
        compressed.append([branch.basket_compressed_bytes(number)])
        seeks.append([-1])
        embedded[position + number] = _embedded_size(basket)
    return normal + len(extra)


class TreeIndexes:
    """Least-recently-used :class:`TreeIndex` (or, for an RNTuple, :class:`PageIndex`) per
    (file, tree), bounded in bytes."""

    def __init__(self, cap_bytes: int) -> None:
        self.cap_bytes = cap_bytes
        self._lock = threading.Lock()
        self._indexes: OrderedDict[tuple[str, str], TreeIndex | PageIndex] = OrderedDict()
        self._bytes = 0

    def get(
        self, file_key: str, treename: str, open_tree: Callable[[], Any]
    ) -> TreeIndex | PageIndex:
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
        tree = open_tree()
        index = PageIndex(tree) if is_rntuple(tree) else TreeIndex(tree)
        with self._lock:
            if key not in self._indexes and index.nbytes <= self.cap_bytes:
                self._indexes[key] = index
                self._bytes += index.nbytes
                while self._bytes > self.cap_bytes:
                    _, old = self._indexes.popitem(last=False)
                    self._bytes -= old.nbytes
        return index


class SeenFiles:
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
                COUNTERS.add("files_seen_resets")
            self._seen.add(key)
            return True


TREE_INDEXES = TreeIndexes(MAX_TREE_INDEX_BYTES)
FILES_SEEN = SeenFiles(MAX_FILES_SEEN)


# --- basket arithmetic ----------------------------------------------------------


def uncompressed_from_keys(source: Any, seeks: list[int], sizes: list[int]) -> list[int]:
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
    ranges = [(seek, seek + TKEY_HEAD.size) for seek in seeks]
    chunks = source.chunks(ranges, notifications=queue.Queue())
    sizes_out = []
    for chunk, seek, size in zip(chunks, seeks, sizes, strict=True):
        nbytes, _, objlen, _, keylen = TKEY_HEAD.unpack(bytes(chunk.raw_data[: TKEY_HEAD.size]))
        if nbytes != size or objlen < 0 or keylen <= 0:
            raise ValueError(f"the TKey at {seek} does not describe a basket of {size} bytes")
        sizes_out.append(objlen + keylen)
    return sizes_out
