"""The read-shape rules, over the files' ``read_shapes``: many small remote requests, the
metadata re-read at every chunk, reads spanning more than the baskets used, and baskets
decompressed whole for a few of their entries."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from roastcoffea.metrics.diagnosis.finding import Action, Basis, Finding
from roastcoffea.units import format_bytes, units_word

#: A remote file's requests are small below this many bytes, and many from this many per
#: chunk; metadata dominates at this % of the bytes fetched; the reads are amplified at
#: this many bytes fetched per byte of basket used; a chunk decompresses too much at this
#: many bytes decompressed per byte its entries hold, with baskets of this many times
#: its entries.
SMALL_REQUEST_BYTES = 64 << 10
MANY_REQUESTS = 10
METADATA_PERCENT = 50.0
AMPLIFICATION = 2.0
DECOMPRESS_AMPLIFICATION = 2.0
BASKET_CHUNKS = 2.0

Shapes = dict[str, dict[str, Any]]


def read_findings(shapes: Shapes, basis: Basis | None = None) -> list[Finding]:
    """The read-shape rules over the files: each names its files and what helps."""
    basis = basis or Basis({}, None, None, 0)
    findings = []
    for fires, advise in RULES:
        files = {name: shape for name, shape in shapes.items() if fires(shape)}
        if files:
            findings.append(advise(files, shapes, basis))
    return findings


def _part(files: Shapes, shapes: Shapes, field: str) -> float:
    """The files' share of every file's ``field``."""
    whole = sum(s[field] or 0 for s in shapes.values())
    return sum(s[field] or 0 for s in files.values()) / whole if whole else 0.0


def _named(files: Shapes) -> str:
    names = sorted(files)
    more = f" and {len(names) - 3} more" if len(names) > 3 else ""
    return ", ".join(names[:3]) + more


def _small_requests(shape: dict[str, Any]) -> bool:
    spread = shape["bytes_per_request"]
    return bool(
        shape["remote"]
        and shape["requests_per_chunk"] >= MANY_REQUESTS
        and spread is not None
        and spread["median"] < SMALL_REQUEST_BYTES
    )


def _small_requests_finding(files: Shapes, shapes: Shapes, basis: Basis) -> Finding:
    shape = max(files.values(), key=lambda s: s["requests_per_chunk"])
    size = format_bytes(shape["bytes_per_request"]["median"])
    part = _part(files, shapes, "fetched_bytes")
    return Finding(
        "small-requests",
        "read",
        100.0 * part,
        basis.at_stake(basis.effective("read") * part),
        f"many small requests on remote files ({_named(files)}): up to "
        f"{shape['requests_per_chunk']:.0f} per chunk of {size} (median), each waiting a "
        "round trip",
        (
            Action("read the columns a chunk needs together"),
            Action(f"write larger {units_word(shape['storage_unit'])}"),
            Action("read through a cache near the workers"),
        ),
        {"requests_per_chunk": shape["requests_per_chunk"], "bytes_per_request": size},
    )


def _metadata_reread(shape: dict[str, Any]) -> bool:
    percent = shape["metadata_percent"]
    return shape["chunks"] > 1 and percent is not None and percent >= METADATA_PERCENT


def _metadata_finding(files: Shapes, shapes: Shapes, basis: Basis) -> Finding:
    shape = max(files.values(), key=lambda s: s["metadata_percent"])
    per_chunk = shape["open_bytes"] / shape["chunks"]
    return Finding(
        "metadata-reread",
        "open",
        100.0 * _part(files, shapes, "fetched_bytes"),
        basis.at_stake(basis.effective("open") * _part(files, shapes, "chunks")),
        f"the file's metadata is re-read at every chunk ({_named(files)}): opening the file "
        f"and its tree fetched {format_bytes(per_chunk)} per chunk, "
        f"{shape['metadata_percent']:.1f}% of the bytes fetched",
        (Action("larger chunks (fewer per file) fetch it fewer times", "chunk_size", "larger"),),
        {"open_bytes_per_chunk": per_chunk, "metadata_percent": shape["metadata_percent"]},
    )


def _amplified(shape: dict[str, Any]) -> bool:
    return shape["amplification"] is not None and shape["amplification"] >= AMPLIFICATION


def _amplification_finding(files: Shapes, shapes: Shapes, basis: Basis) -> Finding:
    shape = max(files.values(), key=lambda s: s["amplification"])
    units = units_word(shape["storage_unit"])
    # uproot reads an RNTuple a cluster at a time, a TTree a basket at a time
    boundary = "cluster" if shape["storage_unit"] == "page" else "basket"
    part = _part(files, shapes, "fetched_bytes")
    waste = 1.0 - 1.0 / shape["amplification"]
    return Finding(
        "read-amplification",
        "read",
        100.0 * part,
        basis.at_stake(basis.effective("read") * part * waste),
        f"the reads fetched {shape['amplification']:.1f}x the bytes of the {units} used "
        f"({_named(files)}): the reads span {units} or branches the analysis does not use",
        (Action(f"chunk boundaries on {boundary} boundaries"), Action("fewer branches read")),
        {"amplification": shape["amplification"]},
    )


def _decompressed_whole(shape: dict[str, Any]) -> bool:
    amplification, unit, chunk = (
        shape.get(k) for k in ("decompress_amplification", "unit_entries", "chunk_entries")
    )
    return (
        amplification is not None
        and amplification >= DECOMPRESS_AMPLIFICATION
        and unit is not None
        and chunk is not None
        and unit >= BASKET_CHUNKS * chunk
    )


def _basket_size_finding(files: Shapes, shapes: Shapes, basis: Basis) -> Finding:
    shape = max(files.values(), key=lambda s: s["decompress_amplification"])
    amplification = shape["decompress_amplification"]
    # an RNTuple's unit of decompression is its cluster: uproot reads it whole
    unit = "cluster" if shape["storage_unit"] == "page" else "basket"
    decompressed = sum(s["decompressed_bytes"] for s in files.values())
    used = sum(s["used_bytes"] for s in files.values())
    part = _part(files, shapes, "decompressed_bytes")
    wasted = part * (1.0 - 1.0 / amplification)
    claims = {phase: basis.effective(phase) * wasted for phase in ("decompress", "read")}
    return Finding(
        "basket-size",
        "decompress",
        100.0 * part,
        basis.at_stake(sum(claims.values())),
        f"each chunk decompressed {amplification:.1f}x the bytes its entries hold "
        f"({format_bytes(decompressed)} for {format_bytes(used)} used; {_named(files)}): "
        f"a {unit} holds {shape['unit_entries']:,.0f} entries, a chunk "
        f"{shape['chunk_entries']:,.0f}, so every chunk decompresses whole {unit}s again",
        (
            Action(
                f"chunks of at least {shape['unit_entries']:,.0f} entries",
                "chunk_size",
                "larger",
            ),
            Action(f"files written with {unit}s of fewer entries"),
        ),
        {
            "decompress_amplification": amplification,
            "decompressed_bytes": decompressed,
            "used_bytes": used,
            f"{unit}_entries": shape["unit_entries"],
            "chunk_entries": shape["chunk_entries"],
        },
        claims,
    )


#: (whether a file's shape fires the rule, the rule's finding over the files that do).
RULES: tuple[tuple[Callable[[dict[str, Any]], bool], Callable[..., Finding]], ...] = (
    (_small_requests, _small_requests_finding),
    (_metadata_reread, _metadata_finding),
    (_amplified, _amplification_finding),
    (_decompressed_whole, _basket_size_finding),
)
