"""One diagnosis: where the processor's time went, what each cause held, and what helps.

The rules (docs/metrics.md, "Diagnosis") are derived together from the metrics before
them:

- :mod:`.phase_rules`: a phase holding a large share of the processor time, its wait for
  a CPU left out;
- :mod:`.contention`: the threads waiting for a CPU, and why (the nodes' view);
- :mod:`.tail`: the end of the processing with threads idle, and its cause;
- :mod:`.reads`: the shape of the files' reads.

Then :mod:`.reconcile` leaves one way for each knob (the chunk size, the threads), and
the findings are ranked by the processing's wall time each holds at stake.
"""

from __future__ import annotations

from roastcoffea.metrics._util import Metrics
from roastcoffea.metrics.diagnosis.contention import CONTENTION_PERCENT, contention_findings
from roastcoffea.metrics.diagnosis.finding import Action, Basis, Finding
from roastcoffea.metrics.diagnosis.phase_rules import RULES, phase_findings
from roastcoffea.metrics.diagnosis.reads import read_findings
from roastcoffea.metrics.diagnosis.reconcile import reconcile
from roastcoffea.metrics.diagnosis.tail import TAIL_IDLE_PERCENT, tail_findings
from roastcoffea.metrics.phases import IO_PHASES

__all__ = [
    "CONTENTION_PERCENT",
    "RULES",
    "TAIL_IDLE_PERCENT",
    "Action",
    "Basis",
    "Finding",
    "compute",
    "diagnose",
    "read_findings",
]


def diagnose(out: Metrics) -> list[Finding]:
    """Every finding of the metrics so far, reconciled, the largest stake first."""
    basis = Basis.of(out)
    reads = read_findings(out.get("read_shapes") or {}, basis)
    claimed: dict[str, float] = {}
    for finding in reads:
        for phase, seconds in finding.claims.items():
            claimed[phase] = claimed.get(phase, 0.0) + seconds
    findings = [
        *phase_findings(basis.claiming(claimed), out),
        *contention_findings(basis, out),
        *tail_findings(out),
        *reads,
    ]
    ranked = sorted(
        reconcile(findings),
        key=lambda f: (f.wall_at_stake_seconds is None, -(f.wall_at_stake_seconds or 0.0)),
    )
    return ranked


def compute(out: Metrics) -> None:
    """Put ``diagnosis`` (the findings as dicts, ranked) and ``diagnosis_summary``."""
    findings = diagnose(out)
    basis = Basis.of(out)
    if findings:
        out.put("diagnosis", [f.as_dict() for f in findings])
    elif basis.total > 0:
        out.put("diagnosis", [])
    else:
        reason = out.unavailable.get("phase_wall_seconds", "no phase measured")
        out.missing("diagnosis", f"no finding, and no phase measured to weigh one: {reason}")
    if basis.total > 0:
        out.put("diagnosis_summary", _summary(basis))
    else:
        reason = out.unavailable.get("phase_wall_seconds", "no phase measured")
        out.missing("diagnosis_summary", f"needs phase_wall_seconds: {reason}")


def _summary(basis: Basis) -> str:
    """Getting the data in against the user's code, the wait for a CPU, the largest phase."""
    data_in = basis.effective_share(sum(basis.effective(p) for p in IO_PHASES))
    user = basis.effective_share(basis.effective("user"))
    top = max(basis.wall, key=lambda p: basis.effective(p))
    side = "getting the data in dominates" if data_in >= user else "the user's code dominates"
    of = "of the processor time"
    if basis.cpu_wait is not None:
        waited = basis.share(basis.waited())
        of = f"of the processor time not spent waiting for a CPU ({waited:.1f}%)"
    return (
        f"{data_in:.1f}% {of} getting the data in (open, read, decompress, interpret) "
        f"against {user:.1f}% in the user's code: {side}; largest phase: {top} "
        f"({basis.effective_share(basis.effective(top)):.1f}%)"
    )
