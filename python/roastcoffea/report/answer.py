"""The answer a report opens with: the run in one sentence and what to change first.

Both the terminal (``roastcoffea show``, :mod:`roastcoffea.report.summary`) and the
HTML report (:mod:`roastcoffea.report.html`) lay out the same :class:`Answer`: the
headline (events, wall time, event and data rate, workers, core efficiency), then the
top findings of the diagnosis, the largest wall time at stake first, each as what to
change and the cause it rests on. The details follow in the tables.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from roastcoffea.report.tables import cells
from roastcoffea.units import format_gbps, format_time

#: Findings the answer shows; the diagnosis table lists every one.
TOP_FINDINGS = 3


@dataclass(frozen=True)
class TopFinding:
    """One finding as the answer shows it: the stake, what to change, why.

    A finding without an action (a cause the rules name but cannot remedy) has its
    cause as ``change`` and an empty ``cause``.
    """

    stake: str
    change: str
    cause: str


@dataclass(frozen=True)
class Answer:
    """The headline, the top findings, and what stands in their place when there are none.

    ``verdict`` is the diagnosis summary (the balance of the processor's time), or
    None; ``empty`` says why no finding is shown (nothing found, or not measured);
    ``more`` counts the findings beyond the top ones; ``shortfall`` says which chunks
    sent no record, and why (:func:`shortfall`), or is None.
    """

    headline: str
    findings: tuple[TopFinding, ...]
    more: int
    verdict: str | None
    empty: str | None
    shortfall: str | None = None


def answer(metrics: Mapping[str, Any], top: int = TOP_FINDINGS) -> Answer:
    """The answer of a metrics dictionary, with at most ``top`` findings."""
    found = metrics.get("diagnosis")
    findings = [f for f in found if isinstance(f, Mapping)] if isinstance(found, list) else []
    empty = None
    if not isinstance(found, list):
        reason = (metrics.get("unavailable") or {}).get("diagnosis", "not measured")
        empty = f"No diagnosis: {reason}."
    elif not findings:
        empty = "Nothing to change: no rule found a cause of lost time."
    verdict = metrics.get("diagnosis_summary")
    return Answer(
        headline(metrics),
        tuple(_top_finding(f) for f in findings[:top]),
        max(len(findings) - top, 0),
        f"{verdict}." if isinstance(verdict, str) else None,
        empty,
        shortfall(metrics),
    )


def shortfall(metrics: Mapping[str, Any]) -> str | None:
    """Which of coffea's chunks sent no record, and why (``record_coverage``); None when
    the records cover the run or nothing could be compared."""
    coverage = metrics.get("record_coverage")
    if not isinstance(coverage, Mapping) or coverage.get("complete") is not False:
        return None
    parts = []
    for what in ("chunks", "events"):
        recorded, reported = coverage.get(f"{what}_recorded"), coverage.get(f"{what}_reported")
        if cells.is_number(recorded) and cells.is_number(reported) and recorded != reported:
            parts.append(f"{int(recorded):,} of {int(reported):,} {what}")
    per_dataset = coverage.get("per_dataset")
    for dataset, row in sorted(per_dataset.items() if isinstance(per_dataset, Mapping) else ()):
        if not isinstance(row, Mapping):
            continue
        recorded, reported = row.get("events_recorded"), row.get("events_reported")
        if cells.is_number(recorded) and cells.is_number(reported) and recorded != reported:
            parts.append(f"{int(recorded):,} of {int(reported):,} events of {dataset}")
    listed = coverage.get("causes")
    causes = "; ".join(str(c) for c in listed) if isinstance(listed, list) else ""
    covered = ", ".join(parts) if parts else "not all of coffea's count"
    return f"The records cover {covered}: {causes}." if causes else f"The records cover {covered}."


def headline(metrics: Mapping[str, Any]) -> str:
    """The run in one sentence; a value that was not measured reads ``N/A``."""

    def shown(key: str, fmt: cells.Formatter) -> str:
        return cells.value_cell(metrics, key, fmt).text

    events = shown("total_events", cells.count)
    wall = shown("wall_time", format_time)
    rate = shown("event_rate_wall_khz", cells.khz)
    data = shown("overall_rate_gbps", format_gbps)
    workers = shown("peak_workers", cells.count)
    threads = shown("total_cores", cells.number(0))
    efficiency = shown("core_efficiency", cells.fraction)
    return (
        f"{events} events in {wall}: {rate}, {data}, on {workers} workers "
        f"({threads} threads) at {efficiency} core efficiency."
    )


def _top_finding(finding: Mapping[str, Any]) -> TopFinding:
    stake = cells.show(finding.get("wall_at_stake_seconds"), format_time)
    listed = finding.get("actions")
    actions = [str(a) for a in listed] if isinstance(listed, list) else []
    cause = str(finding.get("cause", _cause_of(finding, actions)))
    return TopFinding(
        "stake not measured" if stake.missing else f"{stake.text} at stake",
        "; ".join(actions) if actions else cause,
        cause if actions else "",
    )


def _cause_of(finding: Mapping[str, Any], actions: list[str]) -> str:
    """The cause of a finding saved without one: its message less the actions it ends with."""
    message = str(finding.get("message", ""))
    suffix = ": " + "; ".join(actions)
    return message.removesuffix(suffix) if actions else message
