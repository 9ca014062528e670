"""The answer a report opens with, and its fit to one terminal screen.

The findings here are written as the diagnosis writes them (``Finding.as_dict``); the
answer of a real run is checked in test_cli.py (``show``) and test_report_html.py.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from roastcoffea.metrics.diagnosis import Action, Finding
from roastcoffea.report.answer import TOP_FINDINGS, answer, headline
from roastcoffea.report.summary import CAUSE_LINES, answer_lines

RUN = {
    "total_events": 2_000_000,
    "wall_time": 39.26,
    "event_rate_wall_khz": 50.94,
    "overall_rate_gbps": 0.02811,
    "peak_workers": 2,
    "total_cores": 2.0,
    "core_efficiency": 0.094,
}

#: The first line of a finding in the answer: ``N. <stake>: <what to change>``.
RANK = re.compile(r"^(\d+)\. ")


def finding(stake: float | None, cause: str, *actions: str) -> dict[str, Any]:
    return Finding("phase", "read", 10.0, stake, cause, tuple(map(Action, actions))).as_dict()


def test_the_headline_is_the_run_in_one_sentence() -> None:
    assert headline(RUN) == (
        "2,000,000 events in 39.26 s: 50.94 kHz, 28.11 Mbps, on 2 workers (2 threads) at "
        "9.4% core efficiency."
    )


def test_a_value_not_measured_reads_na_in_the_headline() -> None:
    run = {**RUN, "overall_rate_gbps": None, "unavailable": {"overall_rate_gbps": "no bytes"}}
    assert "events in 39.26 s: 50.94 kHz, N/A, on 2 workers" in headline(run)


def test_the_top_findings_in_the_diagnosis_order() -> None:
    found = [finding(10.0 - i, f"cause {i}", f"do {i}", f"or {i}") for i in range(5)]
    top = answer({**RUN, "diagnosis": found})
    assert [f.change for f in top.findings] == [f"do {i}; or {i}" for i in range(TOP_FINDINGS)]
    assert [f.cause for f in top.findings] == [f"cause {i}" for i in range(TOP_FINDINGS)]
    assert top.findings[0].stake == "10.00 s at stake"
    assert top.more == 5 - TOP_FINDINGS and top.empty is None


def test_a_finding_saved_without_its_cause_has_it_from_the_message() -> None:
    saved = finding(1.0, "the cause: with a colon", "do this", "or that")
    del saved["cause"]
    top = answer({**RUN, "diagnosis": [saved]}).findings[0]
    assert (top.cause, top.change) == ("the cause: with a colon", "do this; or that")


def test_a_finding_without_an_action_is_its_cause_once() -> None:
    top = answer({**RUN, "diagnosis": [finding(None, "a cause")]}).findings[0]
    assert (top.stake, top.change, top.cause) == ("stake not measured", "a cause", "")


@pytest.mark.parametrize(
    ("diagnosis", "empty"),
    [
        ([], "Nothing to change: no rule found a cause of lost time."),
        (None, "No diagnosis: no phase measured."),
    ],
)
def test_no_finding_says_why(diagnosis: list[Any] | None, empty: str) -> None:
    unavailable = {} if diagnosis is not None else {"diagnosis": "no phase measured"}
    top = answer({**RUN, "diagnosis": diagnosis, "unavailable": unavailable})
    assert top.findings == () and top.empty == empty
    assert [str(line) for line in answer_lines(top, 80)][-1] == empty


@pytest.mark.parametrize(("width", "height"), [(80, 24), (60, 15), (120, 40), (40, 8)])
def test_the_answer_fits_the_screen_and_keeps_the_largest_stakes(width: int, height: int) -> None:
    long = "a cause in many words " * 20
    found = [finding(50.0 - i, long, "an action in a few words " * 3) for i in range(6)]
    top = answer({**RUN, "diagnosis": found})
    lines = [str(line) for line in answer_lines(top, width, height)]
    assert max(map(len, lines)) <= width
    assert len(lines) <= height or not any(line.startswith("2. ") for line in lines)
    ranks = [int(m[1]) for line in lines if (m := RANK.match(line))]
    assert ranks == list(range(1, len(ranks) + 1)) and ranks[0] == 1
    left = len(found) - len(ranks)
    assert (left > 0) == any(f"{left} more in the Diagnosis table." in line for line in lines)
    causes = [line for line in lines if line.startswith("   ") and "cause" in line]
    assert len(causes) <= CAUSE_LINES * len(ranks)
    assert all(line.endswith("…") for line in causes[CAUSE_LINES - 1 :: CAUSE_LINES])


def test_without_a_height_every_top_finding_is_shown() -> None:
    found = [finding(5.0 - i, "c " * 200, "a") for i in range(5)]
    lines = [str(line) for line in answer_lines(answer({**RUN, "diagnosis": found}), 80)]
    assert sum(bool(RANK.match(line)) for line in lines) == TOP_FINDINGS
    assert lines[-1] == "2 more in the Diagnosis table."
