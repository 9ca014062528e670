"""The shape of the reads: requests, bytes per request, metadata against baskets, amplification.

Source: the chunk records' copies of the file source's own counters
(uproot's ``num_requests``, ``num_requested_chunks`` and
``num_requested_bytes``): when ``process()`` starts (``open_*``: opening the
file and reading its tree's metadata) and when the task ends (``*_task``, less
the instrumentation's own requests), and the bytes of the baskets each chunk
used (``accessed_bytes``; an RNTuple's pages). uproot counts a vectored read of several byte ranges
as one request.

What was decompressed against what the chunk used: uproot decompresses every basket a
chunk touches whole, ``accessed_uncompressed_bytes``, of which the chunk's entries hold
``accessed_used_bytes`` (each basket's bytes spread evenly over its entries). Baskets of
many more entries than a chunk's are decompressed again by every chunk that touches them.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from roastcoffea.metrics._util import Metrics, is_number, lacking, storage_unit

if TYPE_CHECKING:
    from roastcoffea.metrics import MetricsInputs

#: Chunk record fields each file's totals add up.
FIELDS = {
    "requests": "read_requests_task",
    "ranges": "read_ranges_task",
    "fetched_bytes": "bytes_read_task",
    "open_requests": "open_requests",
    "open_bytes": "open_bytes",
    "basket_bytes": "accessed_bytes",
}
KEYS = (
    "read_shapes",
    "read_requests",
    "bytes_per_request",
    "metadata_bytes",
    "metadata_percent",
    "read_amplification",
    "decompress_amplification",
)
#: The fields of what was decompressed (records written before them lack them).
DECOMPRESSED = {
    "decompressed_bytes": "accessed_uncompressed_bytes",
    "used_bytes": "accessed_used_bytes",
}


def is_remote(name: Any) -> bool:
    """Whether a file name is a URL of a remote source (``root://``, ``https://``, ...)."""
    return isinstance(name, str) and "://" in name and not name.startswith("file://")


def compute(inputs: MetricsInputs, out: Metrics) -> None:
    """Put ``read_shapes`` (per file) and the run's totals."""
    chunks = inputs.chunks
    missing = next((why for field in FIELDS.values() if (why := lacking(chunks, field))), None)
    if not chunks or missing:
        reason = missing or "no chunk record (process() is not decorated with @track_metrics)"
        for key in KEYS:
            out.missing(key, reason)
        return
    by_file: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for chunk in chunks:
        by_file[chunk.get("file")].append(chunk)
    shapes = {str(name): file_shape(name, records) for name, records in by_file.items()}
    out.put("read_shapes", dict(sorted(shapes.items())))
    total = {field: sum(s[field] for s in shapes.values()) for field in FIELDS}
    out.put("read_requests", total["requests"])
    if total["requests"]:
        out.put("bytes_per_request", total["fetched_bytes"] / total["requests"])
    else:
        out.missing("bytes_per_request", "no read request was counted")
    out.put("metadata_bytes", total["open_bytes"])
    if total["fetched_bytes"]:
        out.put("metadata_percent", 100.0 * total["open_bytes"] / total["fetched_bytes"])
    else:
        out.missing("metadata_percent", "no byte was fetched")
    amplification = _amplification(total)
    if amplification is None:
        out.missing("read_amplification", "the chunks used no basket with a stored size")
    else:
        out.put("read_amplification", amplification)
    _put_decompress_amplification(chunks, out)


def _put_decompress_amplification(chunks: list[dict[str, Any]], out: Metrics) -> None:
    missing = next(
        (why for field in DECOMPRESSED.values() if (why := lacking(chunks, field))), None
    )
    if missing:
        out.missing("decompress_amplification", missing)
        return
    decompressed, used = (sum(c[f] for c in chunks) for f in DECOMPRESSED.values())
    if used:
        out.put("decompress_amplification", decompressed / used)
    else:
        out.missing("decompress_amplification", "the chunks' entries held no decompressed byte")


def file_shape(name: Any, records: list[dict[str, Any]]) -> dict[str, Any]:
    """One file's reads: totals, requests per chunk, bytes per request and the ratios."""
    shape: dict[str, Any] = {f: sum(r[field] for r in records) for f, field in FIELDS.items()}
    per_request = [
        r["bytes_read_task"] / r["read_requests_task"] for r in records if r["read_requests_task"]
    ]
    shape.update(
        storage_unit=storage_unit(records),
        chunks=len(records),
        remote=is_remote(name),
        requests_per_chunk=shape["requests"] / len(records),
        bytes_per_request=_spread(per_request),
        metadata_percent=(
            100.0 * shape["open_bytes"] / shape["fetched_bytes"] if shape["fetched_bytes"] else None
        ),
        amplification=_amplification(shape),
        **_decompressed(records),
    )
    return shape


def _decompressed(records: list[dict[str, Any]]) -> dict[str, Any]:
    """What the file's chunks decompressed against what their entries used, and the
    entries of a basket (a cluster) against a chunk's, medians over the chunks."""
    if any(lacking(records, field) for field in DECOMPRESSED.values()):
        return dict.fromkeys(
            (
                "decompressed_bytes",
                "used_bytes",
                "decompress_amplification",
                "unit_entries",
                "chunk_entries",
            )
        )
    sums = {name: sum(r[field] for r in records) for name, field in DECOMPRESSED.items()}
    units = [
        r["accessed_unit_entries"] for r in records if is_number(r.get("accessed_unit_entries"))
    ]
    spans = [
        r["entry_stop"] - r["entry_start"]
        for r in records
        if is_number(r.get("entry_start")) and is_number(r.get("entry_stop"))
    ]
    return {
        **sums,
        "decompress_amplification": (
            sums["decompressed_bytes"] / sums["used_bytes"] if sums["used_bytes"] else None
        ),
        "unit_entries": statistics.median(units) if units else None,
        "chunk_entries": statistics.median(spans) if spans else None,
    }


def _amplification(totals: dict[str, Any]) -> float | None:
    """Bytes fetched after the open per byte of the baskets the chunks used."""
    used = totals["basket_bytes"]
    return (totals["fetched_bytes"] - totals["open_bytes"]) / used if used else None


def _spread(values: list[float]) -> dict[str, float] | None:
    """Median, min and max of the chunks' mean bytes per request."""
    finite = [v for v in values if is_number(v) and math.isfinite(v)]
    if not finite:
        return None
    return {"median": statistics.median(finite), "min": min(finite), "max": max(finite)}
