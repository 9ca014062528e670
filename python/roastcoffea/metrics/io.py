"""ROOT input: bytes by source, the compression ratio of what was read, branch coverage per file.

Source: the chunk records. A chunk's ``accessed_bytes`` and
``accessed_uncompressed_bytes`` are the compressed and uncompressed sizes of
the baskets of its accessed branches that overlap its entry range: what that
chunk read (a basket straddling two chunks counts in both). Per file and for
the whole run, each basket counts once, by its identity in ``accessed_baskets``.
Every record counts here, failed ones included: their bytes were read.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from roastcoffea.metrics._util import Metrics, is_number, lacking, put_sums, storage_unit

if TYPE_CHECKING:
    from roastcoffea.metrics import MetricsInputs

#: Chunk byte totals: metric key -> record field (each None unless every record has it).
BYTE_TOTALS = {
    "bytes_read_uncompressed": "accessed_uncompressed_bytes",
    "chunk_bytes_read": "bytes_read",
    "chunk_bytes_read_task": "bytes_read_task",
}

COVERAGE_KEYS = (
    "compression_ratio",
    "file_metadata",
    "compression_ratios",
    "file_read_metrics",
    "avg_branches_read_percent",
    "avg_bytes_read_percent",
    "bytes_read_percent_per_file",
    "total_branches_read",
    "accessed_branches",
)

#: {(file, tree, basket id): (compressed, uncompressed)} of the distinct baskets some chunks read.
Baskets = dict[tuple[Any, Any, int], tuple[int, int]]


def compute(inputs: MetricsInputs, out: Metrics) -> None:
    """Put the chunk byte totals, the compression ratio and the branch coverage."""
    chunks = inputs.chunks
    if not chunks:
        reason = "no chunk record (process() is not decorated with @track_metrics)"
        for key in (*BYTE_TOTALS, *COVERAGE_KEYS):
            out.missing(key, reason)
        return
    put_sums(out, chunks, BYTE_TOTALS)
    _put_compression_ratio(chunks, out)
    files = file_read_metrics(chunks)
    out.put("file_metadata", _file_metadata(chunks))
    out.put("file_read_metrics", files)
    out.put(
        "compression_ratios",
        [m["compression_ratio"] for m in files.values() if m["compression_ratio"] is not None],
    )
    for key, field in (
        ("avg_branches_read_percent", "branches_read_percent"),
        ("avg_bytes_read_percent", "bytes_read_percent"),
    ):
        values = [m[field] for m in files.values() if m[field] is not None]
        if values:
            out.put(key, sum(values) / len(values))
        else:
            out.missing(key, f"no file has {field} (file metadata or accessed baskets missing)")
    out.put(
        "bytes_read_percent_per_file",
        [m["bytes_read_percent"] for m in files.values() if m["bytes_read_percent"] is not None],
    )
    branches = sorted({b for c in chunks for b in c.get("accessed_branches") or ()})
    out.put("accessed_branches", branches)
    out.put("total_branches_read", len(branches))


def distinct_baskets(chunks: list[dict[str, Any]]) -> Baskets | None:
    """The distinct baskets the chunks read, or None when a chunk lacks them.

    A basket is known by its file, its tree and its ``accessed_baskets`` id
    (its seek in the file, or a negative number for a basket embedded in the
    tree's metadata).
    """
    baskets: Baskets = {}
    for chunk in chunks:
        listed = chunk.get("accessed_baskets")
        if not isinstance(listed, dict):
            return None
        where = (chunk.get("file"), chunk.get("treename"))
        for basket, compressed, uncompressed in zip(
            listed["id"], listed["compressed"], listed["uncompressed"], strict=True
        ):
            baskets[where[0], where[1], basket] = (compressed, uncompressed)
    return baskets


def stored_ratio(baskets: Baskets) -> float | None:
    """Uncompressed / compressed bytes of the stored baskets; None when all are embedded.

    A basket embedded in the TTree metadata has no compressed size of its own,
    so it is left out of both sides.
    """
    stored = [sizes for sizes in baskets.values() if sizes[0] > 0]
    compressed = sum(c for c, _ in stored)
    return sum(u for _, u in stored) / compressed if compressed else None


def _put_compression_ratio(chunks: list[dict[str, Any]], out: Metrics) -> None:
    """Uncompressed / compressed size of the distinct stored baskets the chunks read."""
    baskets = distinct_baskets(chunks)
    if baskets is None:
        why = lacking(chunks, "accessed_bytes") or "a chunk record lacks 'accessed_baskets'"
        out.missing("compression_ratio", f"the baskets read are not known: {why}")
        return
    ratio = stored_ratio(baskets)
    if ratio is None:
        out.missing("compression_ratio", "every basket read was embedded in the TTree metadata")
    else:
        out.put("compression_ratio", ratio)


def _file_metadata(chunks: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    """{file: its metadata} (the same for every chunk of a file; the first one is kept)."""
    found: dict[Any, dict[str, Any]] = {}
    for c in chunks:
        if c.get("file_metadata") and c.get("file") not in found:
            found[c.get("file")] = c["file_metadata"]
    return dict(sorted(found.items(), key=lambda item: str(item[0])))


def file_read_metrics(chunks: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per file, what all its chunks read, each basket (RNTuple page) once.

    ``branches_read`` is the number of distinct branches any chunk of the file
    accessed, ``branches_read_percent`` = 100 * branches_read / total_branches;
    ``bytes_read`` and ``bytes_read_uncompressed`` are the compressed and
    uncompressed sizes of the distinct baskets read, ``bytes_read_percent`` =
    100 * bytes_read / total_tree_bytes; ``compression_ratio`` = uncompressed /
    compressed size of the distinct stored baskets read; ``storage_unit`` says
    whether those are TTree baskets or RNTuple pages (``baskets_read`` counts
    either). Values needing file metadata, or baskets some chunk lacks, are None.
    """
    by_file: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for c in chunks:
        by_file[c.get("file")].append(c)
    metadata = _file_metadata(chunks)
    table: dict[Any, dict[str, Any]] = {}
    for name in sorted(by_file, key=str):
        records = by_file[name]
        meta = metadata.get(name) or {}
        branches = len({b for c in records for b in c.get("accessed_branches") or ()})
        baskets = distinct_baskets(records)
        read = None if baskets is None else sum(c for c, _ in baskets.values())
        total_branches = meta.get("total_branches")
        tree_bytes = meta.get("total_tree_bytes")
        table[name] = {
            "storage_unit": storage_unit(records),
            "num_chunks": len(records),
            "total_branches": total_branches,
            "branches_read": branches,
            "branches_read_percent": _percent(branches, total_branches),
            "total_tree_bytes": tree_bytes,
            "baskets_read": None if baskets is None else len(baskets),
            "bytes_read": read,
            "bytes_read_uncompressed": (
                None if baskets is None else sum(u for _, u in baskets.values())
            ),
            "bytes_read_percent": _percent(read, tree_bytes),
            "compression_ratio": None if baskets is None else stored_ratio(baskets),
        }
    return table


def _percent(part: float | None, whole: float | None) -> float | None:
    if part is None or not is_number(whole) or not whole:
        return None
    return 100.0 * part / whole
