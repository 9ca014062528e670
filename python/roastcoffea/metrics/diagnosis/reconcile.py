"""One way per knob: findings that would turn the chunk size or the worker threads
opposite ways are reconciled.

Each way's weight is the largest stake of the findings wanting it (a sum would count one
lost second twice: the file opening and the metadata it re-reads are the same time). The
heavier way keeps its actions; the findings wanting the other way keep their cause, and
their action on that knob becomes a note naming the trade-off. Equal weights keep
neither way: the two costs balance, and the note says so.
"""

from __future__ import annotations

from roastcoffea.metrics.diagnosis.finding import KNOBS, Finding
from roastcoffea.units import format_time

#: How an action on a knob reads in a note.
PHRASES = {
    ("chunk_size", "larger"): "larger chunks",
    ("chunk_size", "smaller"): "smaller chunks",
    ("threads", "more"): "more threads",
    ("threads", "fewer"): "fewer threads",
}


def reconcile(findings: list[Finding]) -> list[Finding]:
    """The findings with at most one way left for each knob."""
    for knob, ways in KNOBS.items():
        wanting = {way: [f for f in findings if f.wants(knob) == way] for way in ways}
        if not all(wanting.values()):
            continue
        weight = {way: max(_stake(f) for f in wanting[way]) for way in ways}
        first, second = ways
        winner = None if weight[first] == weight[second] else max(ways, key=weight.__getitem__)
        findings = [_noted(f, knob, winner, wanting, weight) for f in findings]
    return findings


def _stake(finding: Finding) -> float:
    return finding.wall_at_stake_seconds or 0.0


def _noted(
    finding: Finding,
    knob: str,
    winner: str | None,
    wanting: dict[str, list[Finding]],
    weight: dict[str, float],
) -> Finding:
    way = finding.wants(knob)
    if way is None or way == winner:
        return finding
    other = next(w for w in KNOBS[knob] if w != way)
    rules = " and ".join(dict.fromkeys(f.rule for f in wanting[other]))
    stakes = f"{format_time(weight[other])} at stake against {format_time(weight[way])}"
    if winner is None:
        note = (
            f"{PHRASES[knob, way]} would cost what they save: {rules} wants "
            f"{PHRASES[knob, other]} ({stakes})"
        )
    else:
        note = (
            f"not {PHRASES[knob, way]}: {rules} wants {PHRASES[knob, other]} and holds more "
            f"({stakes})"
        )
    return finding.without(knob, note)
