"""A short diagnosis of where the processor's time goes, and what typically helps.

Each rule reads the phase shares (``phase_share_percent``) and fires above its
threshold; docs/metrics.md ("Diagnosis") lists the rules with their
thresholds. The first finding always says whether getting the data in (open,
read, decompress, interpret) or the user's code dominates; the others follow
by decreasing share.
"""

from __future__ import annotations

from typing import Any

from roastcoffea.metrics._util import Metrics
from roastcoffea.metrics.phases import IO_PHASES
from roastcoffea.units import format_byte_rate, format_bytes, format_time, units_word

#: Codecs that decompress several times slower than LZ4 and ZSTD.
SLOW_CODECS = ("LZMA", "ZLIB")

#: The tail is worth a finding when its idle thread-seconds are this % of the processing's.
TAIL_IDLE_PERCENT = 10.0

#: Read shapes: a remote file's requests are small below this many bytes, and many from
#: this many per chunk; metadata dominates at this % of the bytes fetched; the reads
#: are amplified at this many bytes fetched per byte of basket used.
SMALL_REQUEST_BYTES = 64 << 10
MANY_REQUESTS = 10
METADATA_PERCENT = 50.0
AMPLIFICATION = 2.0

#: (rule, phase, threshold in % of the phases' time).
RULES = (
    ("decompression", "decompress", 25.0),
    ("storage", "read", 20.0),
    ("interpretation", "interpret", 30.0),
    ("file-opening", "open", 20.0),
    ("user-code", "user", 50.0),
    ("output", "output", 10.0),
    ("unattributed", "other", 10.0),
)


def compute(out: Metrics) -> None:
    """Put ``diagnosis``: a list of ``{rule, phase, share_percent, message}``.

    The phase findings first (their balance, then each rule by decreasing
    share), then the wall time's tail (:func:`tail_finding`).
    """
    shares = out.get("phase_share_percent")
    findings = []
    if shares is not None:
        findings.append(_balance(shares))
        fired = [(p, rule) for rule, p, limit in RULES if shares.get(p, 0.0) >= limit]
        for phase, rule in sorted(fired, key=lambda f: -shares[f[0]]):
            findings.append(_finding(rule, phase, shares[phase], _advice(rule, shares[phase], out)))
    tail = tail_finding(out)
    if tail is not None:
        findings.append(tail)
    findings += read_findings(out.get("read_shapes") or {})
    if findings:
        out.put("diagnosis", findings)
    else:
        reason = out.unavailable.get("phase_share_percent", "no phase measured")
        out.missing("diagnosis", f"needs phase_share_percent: {reason}")


def _finding(rule: str, phase: str | None, share: float, message: str) -> dict[str, Any]:
    return {"rule": rule, "phase": phase, "share_percent": share, "message": message}


def _balance(shares: dict[str, float]) -> dict[str, Any]:
    """Which dominates: getting the data in, or the user's code."""
    io = sum(shares.get(p, 0.0) for p in IO_PHASES)
    user = shares.get("user", 0.0)
    top = max(shares, key=lambda p: shares[p])
    side = "getting the data in dominates" if io >= user else "the user's code dominates"
    message = (
        f"{io:.1f}% of processor time getting the data in (open, read, decompress, "
        f"interpret) vs {user:.1f}% in the user's code: {side}; largest phase: "
        f"{top} ({shares[top]:.1f}%)"
    )
    return _finding("balance", top, shares[top], message)


def _advice(rule: str, share: float, out: Metrics) -> str:
    if rule == "decompression":
        return _decompression(share, out.get("decompress_codecs") or {})
    if rule == "storage":
        rate = out.get("read_bandwidth_mb_s")
        speed = f" at {format_byte_rate(rate * 1e6)}" if rate is not None else ""
        return (
            f"{share:.1f}% of processor time waiting for bytes{speed}: the storage or the "
            "network is the bottleneck; read fewer branches, use a closer replica or "
            "cache, or run more tasks at once"
        )
    messages = {
        "interpretation": "building arrays from decompressed bytes: read fewer branches, "
        "or avoid materialising collections the analysis does not use",
        "file-opening": "opening files and building the NanoEvents form: use larger chunks "
        "(fewer opens per event)",
        "user-code": "in the user's process() code: profile and optimise the analysis",
        "output": "compressing the output: the accumulators are large; fill fewer or "
        "coarser histograms",
        "unattributed": "outside the measured phases (coffea and Dask glue, processor "
        "unpickling): check for a large processor object",
    }
    return f"{share:.1f}% of processor time {messages[rule]}"


def _decompression(share: float, codecs: dict[str, dict[str, Any]]) -> str:
    spent = {name: c["wall_seconds"] for name, c in codecs.items()}
    if not spent:
        return f"{share:.1f}% of processor time decompressing"
    main = max(spent, key=lambda n: spent[n])
    of_main = 100.0 * spent[main] / sum(spent.values()) if sum(spent.values()) else 0.0
    text = f"{share:.1f}% of processor time decompressing ({of_main:.1f}% of it {main})"
    if main in SLOW_CODECS:
        return text + ": files written with LZ4 or ZSTD decompress several times faster"
    return text + f": {main} is already fast; more cores shorten it"


def tail_finding(out: Metrics) -> dict[str, Any] | None:
    """The tail's finding when it left :data:`TAIL_IDLE_PERCENT` of the thread-seconds
    idle: what made it long, and what typically helps."""
    split = out.get("wall_split")
    if split is None:
        return None
    tail = split["tail"]
    capacity = split["steady"]["thread_seconds"] + tail["thread_seconds"]
    share = 100.0 * tail["idle_thread_seconds"] / capacity if capacity > 0 else 0.0
    if share < TAIL_IDLE_PERCENT:
        return None
    cause = out.get("tail_cause")
    head = (
        f"the tail took {format_time(tail['seconds'])} of "
        f"{format_time(out.get('processing_seconds'))} of processing with "
        f"{share:.1f}% of the thread-seconds idle"
    )
    bound = max(out.get("packing_bound_seconds") or 0.0, out.get("longest_chunk_seconds"))
    gain = f"; perfectly packed, the processing would take {format_time(bound)}"
    phase = None if cause is None else cause["phase"]
    return _finding("tail", phase, share, head + ": " + _tail_advice(cause) + gain)


def _tail_advice(cause: dict[str, Any] | None) -> str:
    if cause is None:
        return "too few chunks to keep every thread busy to the end: smaller chunks shorten it"
    ratio, phase = cause["vs_others"], cause["phase"]
    if cause["kind"] == "file":
        where = "that file's storage is slow: read it from a closer replica or cache it"
        if phase not in ("read", "open"):
            where = "its chunks hold more work (events, branches)"
        return (
            f"its slow chunks were file {cause['name']}'s, {ratio:.1f}x the other files' median, "
            f"mostly in {phase}: {where}"
        )
    if cause["kind"] == "worker":
        return (
            f"its slow chunks ran on worker {cause['name']}, {ratio:.1f}x the other workers' "
            f"median on every file, mostly in {phase}: check that node (load, disk, network)"
        )
    return (
        f"a few long chunks held it (the longest {ratio:.1f}x the median, mostly in "
        f"{phase}): smaller chunks (the Runner's chunksize) spread the work over the threads"
    )


def read_findings(shapes: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The read-shape rules over the files: each names its files and what helps."""
    fetched = sum(s["fetched_bytes"] for s in shapes.values())
    rules = (
        ("small-requests", _small_requests, _small_requests_advice),
        ("metadata-reread", _metadata_reread, _metadata_advice),
        ("read-amplification", _amplified, _amplification_advice),
    )
    findings = []
    for rule, fires, advice in rules:
        files = {name: shape for name, shape in shapes.items() if fires(shape)}
        if files:
            share = 100.0 * sum(s["fetched_bytes"] for s in files.values()) / fetched
            findings.append(_finding(rule, "read", share, advice(files)))
    return findings


def _small_requests(shape: dict[str, Any]) -> bool:
    spread = shape["bytes_per_request"]
    return (
        shape["remote"]
        and shape["requests_per_chunk"] >= MANY_REQUESTS
        and spread is not None
        and spread["median"] < SMALL_REQUEST_BYTES
    )


def _metadata_reread(shape: dict[str, Any]) -> bool:
    percent = shape["metadata_percent"]
    return shape["chunks"] > 1 and percent is not None and percent >= METADATA_PERCENT


def _amplified(shape: dict[str, Any]) -> bool:
    return shape["amplification"] is not None and shape["amplification"] >= AMPLIFICATION


def _named(files: dict[str, Any]) -> str:
    names = sorted(files)
    more = f" and {len(names) - 3} more" if len(names) > 3 else ""
    return ", ".join(names[:3]) + more


def _small_requests_advice(files: dict[str, dict[str, Any]]) -> str:
    shape = max(files.values(), key=lambda s: s["requests_per_chunk"])
    size = format_bytes(shape["bytes_per_request"]["median"])
    return (
        f"many small requests on remote files ({_named(files)}): up to "
        f"{shape['requests_per_chunk']:.0f} per chunk of {size} (median), each waiting "
        "a round trip: read the columns a chunk needs together, "
        f"write larger {units_word(shape['storage_unit'])}, or read through a cache near the "
        "workers"
    )


def _metadata_advice(files: dict[str, dict[str, Any]]) -> str:
    shape = max(files.values(), key=lambda s: s["metadata_percent"])
    per_chunk = shape["open_bytes"] / shape["chunks"]
    return (
        f"the file's metadata is re-read at every chunk ({_named(files)}): opening the file "
        f"and its tree fetched {format_bytes(per_chunk)} per chunk, "
        f"{shape['metadata_percent']:.1f}% of the bytes fetched: larger chunks (fewer per "
        "file) fetch it fewer times"
    )


def _amplification_advice(files: dict[str, dict[str, Any]]) -> str:
    shape = max(files.values(), key=lambda s: s["amplification"])
    units = units_word(shape["storage_unit"])
    # uproot reads an RNTuple a cluster at a time, a TTree a basket at a time
    boundary = "cluster" if shape["storage_unit"] == "page" else "basket"
    return (
        f"the reads fetched {shape['amplification']:.1f}x the bytes of the {units} used "
        f"({_named(files)}): the reads span {units} or branches the analysis does not "
        f"use; chunk boundaries on {boundary} boundaries, or fewer branches read"
    )
