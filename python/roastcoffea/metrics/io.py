"""ROOT input: bytes by source, the compression ratio of what was read, branch coverage per file.

Source: the chunk records. ``accessed_bytes`` and ``accessed_uncompressed_bytes``
of a chunk are the compressed and uncompressed sizes of the baskets of its
accessed branches that overlap its entry range (a basket straddling two chunks
counts in both). Every record counts here, failed ones included: their bytes
were read.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from roastcoffea.metrics._util import Metrics, divide, is_number, lacking

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


def compute(inputs: MetricsInputs, out: Metrics) -> None:
    """Put the chunk byte totals, the compression ratio and the branch coverage."""
    chunks = inputs.chunks
    if not chunks:
        reason = "no chunk record (process() is not decorated with @track_metrics)"
        for key in (*BYTE_TOTALS, *COVERAGE_KEYS):
            out.missing(key, reason)
        return
    for key, field in BYTE_TOTALS.items():
        reason = lacking(chunks, field)
        if reason:
            out.missing(key, reason)
        else:
            out.put(key, sum(c[field] for c in chunks))
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
            out.missing(key, f"no file has {field} (file metadata or accessed bytes missing)")
    out.put(
        "bytes_read_percent_per_file",
        [m["bytes_read_percent"] for m in files.values() if m["bytes_read_percent"] is not None],
    )
    branches = sorted({b for c in chunks for b in c.get("accessed_branches") or ()})
    out.put("accessed_branches", branches)
    out.put("total_branches_read", len(branches))


def accessed_sizes(chunks: list[dict[str, Any]]) -> tuple[float, float] | None:
    """Compressed and uncompressed bytes of the stored baskets the chunks read.

    ``(Σ accessed_bytes, Σ accessed_uncompressed_bytes - accessed_embedded_bytes)`` over
    the chunks that have both sizes, or None. Baskets embedded in the TTree's own
    metadata have no compressed size of their own, so they are left out of both sides.
    """
    both = [
        c
        for c in chunks
        if is_number(c.get("accessed_bytes")) and is_number(c.get("accessed_uncompressed_bytes"))
    ]
    if not both:
        return None
    return (
        sum(c["accessed_bytes"] for c in both),
        sum(
            c["accessed_uncompressed_bytes"] - (c.get("accessed_embedded_bytes") or 0) for c in both
        ),
    )


def _put_compression_ratio(chunks: list[dict[str, Any]], out: Metrics) -> None:
    """Compressed / uncompressed size of the baskets the chunks read."""
    sizes = accessed_sizes(chunks)
    if sizes is None:
        why = lacking(chunks, "accessed_uncompressed_bytes") or lacking(chunks, "accessed_bytes")
        out.missing("compression_ratio", f"no chunk record has both accessed sizes: {why}")
        return
    compressed, uncompressed = sizes
    what = "the uncompressed size of the accessed baskets stored outside the TTree metadata"
    out.derive("compression_ratio", lambda: divide(compressed, uncompressed, what))


def _file_metadata(chunks: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """{file: its metadata} (the same for every chunk of a file; the first one is kept)."""
    found: dict[str, dict[str, Any]] = {}
    for c in chunks:
        if c.get("file_metadata") and c.get("file") not in found:
            found[c.get("file")] = c["file_metadata"]
    return dict(sorted(found.items(), key=lambda item: str(item[0])))


def file_read_metrics(chunks: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per file, what all its chunks read (not the first chunk's figures).

    ``branches_read`` is the number of distinct branches any chunk of the file
    accessed, ``branches_read_percent`` = 100 * branches_read / total_branches;
    ``bytes_read`` = Σ accessed_bytes of the file's chunks and
    ``bytes_read_percent`` = 100 * bytes_read / total_tree_bytes;
    ``compression_ratio`` = compressed / uncompressed size of what the file's
    chunks read (as the global ``compression_ratio``). Values needing file
    metadata, or accessed bytes some chunk lacks, are None.
    """
    by_file: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in chunks:
        by_file[c.get("file")].append(c)
    metadata = _file_metadata(chunks)
    table: dict[str, dict[str, Any]] = {}
    for name in sorted(by_file, key=str):
        records = by_file[name]
        meta = metadata.get(name) or {}
        branches = len({b for c in records for b in c.get("accessed_branches") or ()})
        read = (
            sum(c["accessed_bytes"] for c in records)
            if all(is_number(c.get("accessed_bytes")) for c in records)
            else None
        )
        sizes = accessed_sizes(records)
        total_branches = meta.get("total_branches")
        tree_bytes = meta.get("total_tree_bytes")
        table[name] = {
            "num_chunks": len(records),
            "total_branches": total_branches,
            "branches_read": branches,
            "branches_read_percent": _percent(branches, total_branches),
            "total_tree_bytes": tree_bytes,
            "bytes_read": read,
            "bytes_read_percent": _percent(read, tree_bytes),
            "compression_ratio": sizes[0] / sizes[1] if sizes and sizes[1] else None,
        }
    return table


def _percent(part: float | None, whole: float | None) -> float | None:
    if part is None or not is_number(whole) or not whole:
        return None
    return 100.0 * part / whole
