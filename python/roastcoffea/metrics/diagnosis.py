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
from roastcoffea.units import format_byte_rate

#: Codecs that decompress several times slower than LZ4 and ZSTD.
SLOW_CODECS = ("LZMA", "ZLIB")

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
    """Put ``diagnosis``: a list of ``{rule, phase, share_percent, message}``."""
    shares = out.get("phase_share_percent")
    if shares is None:
        reason = out.unavailable.get("phase_share_percent", "no phase measured")
        out.missing("diagnosis", f"needs phase_share_percent: {reason}")
        return
    findings = [_balance(shares)]
    fired = [(phase, rule) for rule, phase, limit in RULES if shares.get(phase, 0.0) >= limit]
    for phase, rule in sorted(fired, key=lambda f: -shares[f[0]]):
        findings.append(_finding(rule, phase, shares[phase], _advice(rule, shares[phase], out)))
    out.put("diagnosis", findings)


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
