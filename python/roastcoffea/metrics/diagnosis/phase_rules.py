"""The phase rules: a phase holding a large share of the processor time, less the time its
threads waited for a CPU (that wait is the contention finding's, and no remedy of the
phase removes it), as a share of the time the threads did not wait."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from roastcoffea.metrics._util import Metrics
from roastcoffea.metrics.diagnosis.finding import Action, Basis, Finding
from roastcoffea.units import format_byte_rate, format_time

#: Codecs that decompress several times slower than LZ4 and ZSTD.
SLOW_CODECS = ("LZMA", "ZLIB")

#: (rule, phase, threshold in % of the processor time).
RULES = (
    ("decompression", "decompress", 25.0),
    ("storage", "read", 20.0),
    ("interpretation", "interpret", 30.0),
    ("file-opening", "open", 20.0),
    ("user-code", "user", 50.0),
    ("output", "output", 10.0),
    ("unattributed", "other", 10.0),
)

Advice = tuple[str, tuple[Action, ...], dict[str, Any]]  # cause, actions, evidence


def phase_findings(basis: Basis, out: Metrics) -> list[Finding]:
    """A finding for each phase whose effective share reaches its rule's threshold."""
    findings = []
    for rule, phase, limit in RULES:
        seconds = basis.effective(phase)
        share = basis.effective_share(seconds)
        if share < limit:
            continue
        head = f"{share:.1f}% of the processor time" + (
            " not spent waiting for a CPU" if basis.waited() else ""
        )
        cause, actions, evidence = ADVICE[rule](head, seconds, basis, out)
        evidence = {f"{phase}_seconds": seconds, **evidence}
        findings.append(
            Finding(rule, phase, share, basis.at_stake(seconds), cause, actions, evidence)
        )
    return findings


def _decompression(head: str, seconds: float, basis: Basis, out: Metrics) -> Advice:
    codecs = out.get("decompress_codecs") or {}
    spent = {name: c["wall_seconds"] for name, c in codecs.items()}
    if not spent or sum(spent.values()) <= 0:
        return f"{head} decompressing", (Action("more cores shorten it"),), {}
    main = max(spent, key=lambda n: spent[n])
    of_main = 100.0 * spent[main] / sum(spent.values())
    rate = codecs[main].get("throughput_mb_s")
    speed = f" at {format_byte_rate(rate * 1e6)}" if rate else ""
    cause = f"{head} decompressing, {of_main:.1f}% of it {main}{speed}"
    evidence = {"codec": main, "codec_percent": of_main, "codec_throughput_mb_s": rate}
    if main in SLOW_CODECS:
        action = Action(
            f"files written with LZ4 or ZSTD decompress several times faster than {main}"
        )
    else:
        action = Action(f"{main} is already fast: more cores shorten it")
    return cause, (action,), evidence


def _storage(head: str, seconds: float, basis: Basis, out: Metrics) -> Advice:
    rate = out.get("read_bandwidth_mb_s")
    speed = f" at {format_byte_rate(rate * 1e6)}" if rate is not None else ""
    return (
        f"{head} waiting for bytes{speed}: the storage or the network is the bottleneck",
        (
            Action("read fewer branches"),
            Action("read from a closer replica or through a cache"),
            Action("more tasks at once overlap the waits", "threads", "more"),
        ),
        {"read_bandwidth_mb_s": rate},
    )


def _interpretation(head: str, seconds: float, basis: Basis, out: Metrics) -> Advice:
    return (
        f"{head} building arrays from decompressed bytes",
        (Action("read fewer branches"), Action("materialise only the collections used")),
        {},
    )


def _file_opening(head: str, seconds: float, basis: Basis, out: Metrics) -> Advice:
    per_chunk = seconds / basis.tasks if basis.tasks else None
    each = f", {format_time(per_chunk)} per chunk" if per_chunk is not None else ""
    return (
        f"{head} opening files and building the NanoEvents form{each}",
        (Action("larger chunks open files fewer times per event", "chunk_size", "larger"),),
        {"open_seconds_per_chunk": per_chunk, "chunks": basis.tasks},
    )


def _user_code(head: str, seconds: float, basis: Basis, out: Metrics) -> Advice:
    hot = (out.get("hot_lines") or [None])[0]
    if hot is None:
        return f"{head} in the user's process()", (Action("profile and optimise it"),), {}
    line = f":{hot['line']}" if hot.get("line") else ""
    where = f"{hot['function']} ({hot['file']}{line})"
    return (
        f"{head} in the user's process(); its hottest function is {where}, "
        f"{hot['share_percent']:.0f}% of the user code's profile samples",
        (Action(f"optimise {hot['function']} first"),),
        {"hot_function": hot["function"], "hot_share_percent": hot["share_percent"]},
    )


def _output(head: str, seconds: float, basis: Basis, out: Metrics) -> Advice:
    return (
        f"{head} compressing the output: the accumulators are large",
        (Action("fill fewer or coarser histograms"),),
        {},
    )


def _unattributed(head: str, seconds: float, basis: Basis, out: Metrics) -> Advice:
    return (
        f"{head} outside the measured phases (coffea and Dask glue, unpickling the processor)",
        (Action("check for a large processor object: it is unpickled for every task"),),
        {},
    )


ADVICE: dict[str, Callable[[str, float, Basis, Metrics], Advice]] = {
    "decompression": _decompression,
    "storage": _storage,
    "interpretation": _interpretation,
    "file-opening": _file_opening,
    "user-code": _user_code,
    "output": _output,
    "unattributed": _unattributed,
}
