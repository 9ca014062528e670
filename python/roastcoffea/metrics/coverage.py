"""Whether the chunk records cover the run, against coffea's count, and why not if short.

Sources: the chunk records of the span, each work item once, against coffea's report
(``chunks``, ``entries``) and, per dataset, the ``entries`` of ``custom_metrics``. Every
figure drawn from the records (distributions, the per-dataset table, chunk_info, the
phases) covers only the chunks that sent one; a shortfall is stated with what explains
it: workers that computed unmonitored, records the workers could not send, the run's
records the scheduler's store dropped at its byte cap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from roastcoffea.metrics._util import Metrics, is_number

if TYPE_CHECKING:
    from roastcoffea.metrics import MetricsInputs

#: Why a shortfall has no cause that roastcoffea saw.
UNEXPLAINED = (
    "no cause seen by roastcoffea: chunks whose process() is not decorated with "
    "@track_metrics, or records that never reached the scheduler"
)


def compute(inputs: MetricsInputs, out: Metrics) -> None:
    """Put ``record_coverage``: the records' chunks and events against the report's."""
    report = inputs.coffea_report
    if report is None:
        out.missing("record_coverage", "no coffea report set")
        return
    good = [c for c in inputs.chunks if not c.get("error")]
    events = _events(good)
    coverage: dict[str, Any] = {
        **_against("chunks", len(good), report.get("chunks")),
        **_against("events", events, report.get("entries")),
        "per_dataset": _per_dataset(good, inputs.custom_metrics),
    }
    rows = coverage["per_dataset"].values()
    missing = [coverage["chunks_missing"], coverage["events_missing"]]
    known = [n for n in (*missing, *(row["events_missing"] for row in rows)) if n is not None]
    coverage["complete"] = all(n == 0 for n in known) if known else None
    coverage["causes"] = _causes(inputs) if any(n > 0 for n in known) else []
    out.put("record_coverage", coverage)


def _events(chunks: list[dict[str, Any]]) -> int:
    return sum(int(c["num_events"]) for c in chunks if is_number(c.get("num_events")))


def _against(what: str, recorded: int, reported: Any) -> dict[str, Any]:
    """``<what>_recorded``, ``<what>_reported`` and their difference (None without a count)."""
    count = int(reported) if is_number(reported) else None
    return {
        f"{what}_recorded": recorded,
        f"{what}_reported": count,
        f"{what}_missing": None if count is None else count - recorded,
    }


def _per_dataset(
    chunks: list[dict[str, Any]], custom_metrics: dict[str, Any] | None
) -> dict[str, dict[str, Any]]:
    """Per dataset of ``custom_metrics`` with ``entries``: its records' events against them."""
    rows: dict[str, dict[str, Any]] = {}
    for dataset, entry in (custom_metrics or {}).items():
        entries = entry.get("entries") if isinstance(entry, dict) else None
        if not is_number(entries):
            continue
        mine = [c for c in chunks if c.get("dataset") == dataset]
        rows[str(dataset)] = _against("events", _events(mine), entries)
    return rows


def _causes(inputs: MetricsInputs) -> list[str]:
    """What roastcoffea saw that explains missing records, most specific first."""
    causes = [
        f"worker {address} computed unmonitored ({reason}): its chunks sent no record"
        for address, reason in sorted(inputs.unmonitored.items())
    ]
    causes += [
        f"{count:,} record(s) lost on the workers ({what})"
        for what, count in sorted(inputs.records_lost.items())
        if what.startswith("chunk")
    ]
    if inputs.records_dropped:
        causes.append(
            f"{inputs.records_dropped:,} of the run's record(s) dropped by the scheduler's "
            "record store at its byte cap"
        )
    dropped = inputs.snapshot.get("counters", {}).get("records_dropped")
    if inputs.records_dropped is None and is_number(dropped) and dropped > 0:
        causes.append(
            f"{int(dropped):,} record(s) dropped by the scheduler's record store at its byte "
            "cap (counted for the whole cluster since the plugin started, not for this run)"
        )
    return causes or [UNEXPLAINED]
