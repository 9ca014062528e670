"""RNTuple page accounting: the pages a chunk read, and the sizes of its clusters.

An RNTuple has no baskets: each column of a field is stored in pages, grouped in
clusters of entries. uproot reads a field's pages one request each
(``read_page``); the phase hooks log every page a chunk's ``process()`` reads, by
its locator's offset, with its stored (compressed) size and the size uproot
decompresses it to (:func:`page_sizes`). The index here holds what a record
needs beside that log: the ntuple's top-level fields, each cluster's stored bytes
over every column (for ``bytes_read_percent``) and the whole ntuple's sizes.
"""

from __future__ import annotations

import bisect
import math
from typing import Any

#: The unit of storage the records of an RNTuple speak of.
PAGE = "page"


def page_sizes(ntuple: Any, cluster: int, column: int, page: int) -> tuple[int, int, int]:
    """``(offset, stored bytes, uncompressed bytes)`` of one page, from uproot's page list.

    The uncompressed size is the column's elements at its bit width, as uproot sizes
    the buffer it decompresses the page into (bits packed eight to a byte).
    """
    description = ntuple.page_link_list[cluster][column].pages[page]
    bits = ntuple.column_records[column].nbits
    locator = description.locator
    return int(locator.offset), int(locator.num_bytes), _uncompressed(description, bits)


def _uncompressed(description: Any, bits: int) -> int:
    """A page's elements at ``bits`` each, in whole bytes."""
    return math.ceil(description.num_elements * bits / 8)


class PageIndex:
    """An RNTuple's fields and cluster sizes, for the byte fields of its chunk records.

    Built once per (file, ntuple) and process, like :class:`~._baskets.TreeIndex`.
    """

    __slots__ = (
        "branches",
        "cluster_bytes",
        "cluster_starts",
        "cluster_stops",
        "nbytes",
        "tree_compressed",
        "tree_uncompressed",
    )

    def __init__(self, ntuple: Any) -> None:
        # the top-level fields: a field is its own parent
        self.branches = tuple(
            field.field_name
            for number, field in enumerate(ntuple.field_records)
            if field.parent_field_id == number
        )
        bits = [column.nbits for column in ntuple.column_records]
        stored = uncompressed = 0
        self.cluster_bytes: list[int] = []
        for cluster in ntuple.page_link_list:
            in_cluster = 0
            for column, pages in enumerate(cluster):
                for page in pages.pages:
                    in_cluster += int(page.locator.num_bytes)
                    uncompressed += _uncompressed(page, bits[column])
            self.cluster_bytes.append(in_cluster)
            stored += in_cluster
        summaries = ntuple.cluster_summaries
        self.cluster_starts = [int(c.num_first_entry) for c in summaries]
        self.cluster_stops = [int(c.num_first_entry + c.num_entries) for c in summaries]
        self.tree_compressed, self.tree_uncompressed = stored, uncompressed
        self.nbytes = 40 * (3 * len(self.cluster_bytes) + 2 * len(self.branches)) + 256

    def in_range(self, start: int, stop: int) -> int:
        """Stored bytes of every column's pages in the clusters overlapping ``[start, stop)``."""
        first = bisect.bisect_right(self.cluster_stops, start)
        last = bisect.bisect_left(self.cluster_starts, stop)
        return sum(self.cluster_bytes[first:last])

    def record_fields(
        self, pages: dict[int, tuple[int, int, int]], start: int, stop: int
    ) -> dict[str, Any]:
        """A chunk record's byte fields from its pages, ``{offset: (stored, uncompressed,
        cluster)}``, for the entries ``[start, stop)``."""
        ids = sorted(pages)
        stored = [pages[offset][0] for offset in ids]
        sizes = [pages[offset][1] for offset in ids]
        used = entries = 0.0
        for offset in ids:
            _, size, cluster = pages[offset]
            first, last = self.cluster_starts[cluster], self.cluster_stops[cluster]
            used += size * overlap(first, last, start, stop)
            entries += last - first
        return {
            "storage_unit": PAGE,
            "accessed_bytes": sum(stored),
            "accessed_uncompressed_bytes": sum(sizes),
            "accessed_used_bytes": round(used),
            "accessed_unit_entries": entries / len(ids) if ids else None,
            "accessed_embedded_bytes": 0,
            "accessed_baskets": {"id": ids, "compressed": stored, "uncompressed": sizes},
        }


def overlap(first: int, last: int, start: int, stop: int) -> float:
    """The share of the entries ``[first, last)`` inside ``[start, stop)``."""
    inside = min(last, stop) - max(first, start)
    return inside / (last - first) if inside > 0 and last > first else 0.0


def is_rntuple(tree: Any) -> bool:
    """Whether ``tree`` is an RNTuple (uproot's model has a page list; a TTree has none)."""
    return hasattr(tree, "page_link_list") and hasattr(tree, "cluster_summaries")
