"""The diagnosis as a whole: every combination of causes gives one way per knob.

Each scenario switches on a subset of seven causes that pull the two knobs (the chunk size,
the worker threads) and is weighed at several sizes, so that either side of a conflict can
hold the larger stake. Whatever fires, the findings never give opposite advice, rank by
their stake, and the wait for a CPU is the contention finding's alone.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import pytest

from roastcoffea.metrics._util import Metrics
from roastcoffea.metrics.diagnosis import diagnose
from roastcoffea.metrics.diagnosis.finding import KNOBS

CAUSES = (
    "storage",  # threads: more
    "file-opening",  # chunk size: larger
    "contention",  # threads: fewer
    "long-chunks",  # chunk size: smaller
    "too-few-chunks",  # chunk size: smaller
    "metadata-reread",  # chunk size: larger
    "basket-size",  # chunk size: larger
)
#: (processing seconds, tail idle fraction of it): small and large stakes for the tail.
SIZES = ((100.0, 0.15), (100.0, 0.6), (400.0, 0.3))


def shape(**fields: Any) -> dict[str, Any]:
    """A file's read shape with nothing to find, then ``fields``."""
    base = {
        "storage_unit": "basket",
        "chunks": 10,
        "requests": 10,
        "ranges": 10,
        "fetched_bytes": 10_000_000,
        "open_requests": 10,
        "open_bytes": 100_000,
        "basket_bytes": 9_900_000,
        "remote": False,
        "requests_per_chunk": 1.0,
        "bytes_per_request": {"median": 1e6, "min": 1e6, "max": 1e6},
        "metadata_percent": 1.0,
        "amplification": 1.0,
        "decompressed_bytes": 30_000_000,
        "used_bytes": 29_000_000,
        "decompress_amplification": 1.03,
        "unit_entries": 1000.0,
        "chunk_entries": 1000.0,
    }
    return {**base, **fields}


def scenario(on: set[str], processing: float, idle: float) -> Metrics:
    """The metrics the rules read, with the causes ``on``."""
    out = Metrics()
    wall = {"open": 5.0, "read": 5.0, "decompress": 5.0, "interpret": 5.0, "other": 0.0}
    wall["open"] = 30.0 if "file-opening" in on else wall["open"]
    wall["read"] = 40.0 if "storage" in on else wall["read"]
    wall["user"] = 100.0 - sum(wall.values())
    wait = dict.fromkeys(wall, 0.0)
    if "contention" in on:
        wall["user"] += 30.0
        wait["user"] = 30.0
    out.put("phase_wall_seconds", wall)
    out.put("phase_cpu_wait_seconds", wait)
    out.put("phase_tasks", 10)
    out.put("processing_seconds", processing)
    out.put("total_cores", 4.0)
    out.put("num_chunks", 10)
    out.put(
        "node_per_host",
        {
            "10.0.0.1": {
                "cores": 2.0,
                "threads": 4.0 if "contention" in on else 2.0,
                "executing_mean": 2.0,
                "runnable_mean": 4.0,
                "runnable_max": 6.0,
                "load_mean": 4.0,
                "steal_percent": 0.0,
            }
        },
    )
    tail = "long-chunks" in on or "too-few-chunks" in on
    idle_seconds = idle * processing * 4 if tail else 0.0
    out.put(
        "wall_split",
        {
            "steady": {"seconds": processing * 0.5, "thread_seconds": processing * 2,
                       "idle_thread_seconds": 0.0},
            "tail": {"seconds": processing * 0.5, "thread_seconds": processing * 2,
                     "idle_thread_seconds": idle_seconds},
        },
    )  # fmt: skip
    out.put("packing_bound_seconds", processing * (1 - idle) if tail else processing)
    out.put("longest_chunk_seconds", 1.0)
    if "long-chunks" in on:
        out.put("tail_cause", {"kind": "chunks", "name": None, "vs_others": 5.0,
                               "phase": "user", "dataset": None})  # fmt: skip
    else:
        out.missing("tail_cause", "the tail holds no chunk at least 2x the median")
    shapes = {"a.root": shape()}
    if "metadata-reread" in on:
        shapes["m.root"] = shape(metadata_percent=80.0, open_bytes=8_000_000)
    if "basket-size" in on:
        shapes["b.root"] = shape(
            decompressed_bytes=10_000_000,
            used_bytes=250_000,
            decompress_amplification=40.0,
            unit_entries=40_000.0,
        )
    out.put("read_shapes", shapes)
    return out


#: The rule each cause makes fire.
RULE_OF = {
    "storage": "storage",
    "file-opening": "file-opening",
    "contention": "contention",
    "long-chunks": "tail",
    "too-few-chunks": "tail",
    "metadata-reread": "metadata-reread",
    "basket-size": "basket-size",
}
#: An action's text that asks for a way of a knob; reconciliation notes start with "not"
#: or say the two ways cost what they save.
ASKS = {
    ("chunk_size", "larger"): re.compile(r"larger chunks|chunks of at least"),
    ("chunk_size", "smaller"): re.compile(r"smaller chunks"),
    ("threads", "more"): re.compile(r"more tasks at once|more threads"),
    ("threads", "fewer"): re.compile(r"fewer (worker )?threads|one worker thread per core"),
}


def is_note(text: str) -> bool:
    return text.startswith("not ") or "would cost what they save" in text


COMBINATIONS = [
    set(on)
    for size in range(len(CAUSES) + 1)
    for on in itertools.combinations(CAUSES, size)
    if not {"long-chunks", "too-few-chunks"} <= set(on)  # one tail cause at a time
]


@pytest.mark.parametrize("processing, idle", SIZES)
def test_no_two_findings_give_opposite_advice_in_any_combination(
    processing: float, idle: float
) -> None:
    conflicts = 0
    for on in COMBINATIONS:
        findings = [f.as_dict() for f in diagnose(scenario(on, processing, idle))]
        rules = {f["rule"] for f in findings}
        assert {RULE_OF[c] for c in on} <= rules, (on, rules)
        for knob in KNOBS:
            ways = {f["knobs"][knob] for f in findings if knob in f["knobs"]}
            assert len(ways) <= 1, (on, knob, ways)
            asked = {
                way
                for f in findings
                for text in f["actions"]
                for way in KNOBS[knob]
                if ASKS[knob, way].search(text) and not is_note(text)
            }
            assert asked <= ways and len(asked) <= 1, (on, knob, asked)
            wanted = {RULE_OF[c] for c in on} & {"storage", "contention"}
            conflicts += knob == "threads" and len(wanted) == 2
        stakes = [f["wall_at_stake_seconds"] for f in findings]
        known = [s for s in stakes if s is not None]
        assert known == sorted(known, reverse=True) and stakes[: len(known)] == known
    assert conflicts > 0  # the enumeration met the conflicts it is about


def test_the_heavier_side_of_a_conflict_keeps_its_way_and_the_other_names_it() -> None:
    both = {"file-opening", "long-chunks"}
    light_tail = [f.as_dict() for f in diagnose(scenario(both, 100, 0.15))]
    heavy_tail = [f.as_dict() for f in diagnose(scenario(both, 100, 0.6))]
    opening = next(f for f in light_tail if f["rule"] == "file-opening")
    tail = next(f for f in light_tail if f["rule"] == "tail")
    # open: 30 of 100 thread-seconds over 100 s = 30 s; the tail: 15 s beyond packing
    assert opening["wall_at_stake_seconds"] == pytest.approx(30.0)
    assert tail["wall_at_stake_seconds"] == pytest.approx(15.0)
    assert opening["knobs"] == {"chunk_size": "larger"} and tail["knobs"] == {}
    assert any(a.startswith("not smaller chunks: file-opening") for a in tail["actions"])
    opening = next(f for f in heavy_tail if f["rule"] == "file-opening")
    tail = next(f for f in heavy_tail if f["rule"] == "tail")
    assert tail["knobs"] == {"chunk_size": "smaller"} and opening["knobs"] == {}
    assert heavy_tail[0]["rule"] == "tail"


def test_time_waiting_for_a_cpu_gets_no_phase_remedy() -> None:
    out = scenario(set(), 100.0, 0.0)
    wall = out.get("phase_wall_seconds")
    wall["read"], wall["user"] = 40.0, 45.0  # 40 s of read wall ...
    out.put("phase_cpu_wait_seconds", {**dict.fromkeys(wall, 0.0), "read": 30.0})  # 30 waiting
    out.get("node_per_host")["10.0.0.1"].update(threads=2.0, executing_mean=1.5,
                                                runnable_mean=6.0)  # fmt: skip
    findings = diagnose(out)
    rules = [f.rule for f in findings]
    assert "storage" not in rules  # 10 s of the 70 s not waiting: 14 % < 20 %
    contention = findings[rules.index("contention")]
    assert contention.wall_at_stake_seconds == pytest.approx(30.0)
    assert "other processes share the node" in contention.cause
    assert contention.wants("chunk_size") is None and contention.wants("threads") is None
    text = " ".join(a.text for a in contention.actions)
    assert not re.search(r"branch|replica|cache|chunk|codec", text)


def test_threads_above_the_cores_ask_for_fewer_threads() -> None:
    findings = diagnose(scenario({"contention"}, 100.0, 0.0))
    (finding,) = [f for f in findings if f.rule == "contention"]
    assert "run 4 threads on 2 cores" in finding.cause
    assert finding.wants("threads") == "fewer"
    assert finding.evidence["cpu_wait_seconds"] == 30.0
    assert finding.share_percent == pytest.approx(100 * 30 / 130)
