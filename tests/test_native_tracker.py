"""roastcoffea._native.DigestTracker: the worker side of the digest payloads."""

from __future__ import annotations

import random
from typing import Any

import pytest

from roastcoffea import _native

DigestTracker = _native.DigestTracker
decode_payload = _native.decode_payload

CPU = ("execute", "span-a", "inc", "thread-cpu", "seconds")
READ = ("execute", "span-a", "inc", "memory-read", "bytes")
NET = ("gather-dep", "network", "seconds")
NET5 = ("gather-dep", "", "", "network", "seconds")


def payload(tracker: DigestTracker, digests: dict[Any, Any]) -> dict[str, Any]:
    return decode_payload(tracker.payload(digests))


def test_first_payload_carries_everything_then_only_changes() -> None:
    tracker = DigestTracker("inc-1", window=2)
    d: dict[Any, Any] = {CPU: 1.5, READ: 4096, NET: 2}
    p1 = payload(tracker, d)
    assert p1["version"] == _native.PAYLOAD_VERSION == 1
    assert p1["incarnation"] == "inc-1"
    assert (p1["seq"], p1["since"], p1["full"]) == (1, 0, False)
    assert p1["digests"] == {CPU: 1.5, READ: 4096.0, NET5: 2.0}
    assert set(p1) == {"version", "incarnation", "seq", "since", "full", "digests"}
    # nothing changed: the window still repeats payload 1's changes once
    p2 = payload(tracker, d)
    assert (p2["seq"], p2["since"]) == (2, 0)
    assert p2["digests"] == p1["digests"]
    p3 = payload(tracker, d)
    assert (p3["seq"], p3["since"]) == (3, 1)
    assert p3["digests"] == {}
    d[CPU] = 2.0
    p4 = payload(tracker, d)
    assert (p4["seq"], p4["since"]) == (4, 2)
    assert p4["digests"] == {CPU: 2.0}
    idle = ("execute", "span-b", "add", "thread-noncpu", "seconds")
    d[idle] = 0.25
    p5 = payload(tracker, d)
    assert p5["digests"] == {CPU: 2.0, idle: 0.25}
    p6 = payload(tracker, d)
    assert p6["digests"] == {idle: 0.25}
    assert tracker.seq == 6


def test_a_changed_value_is_repeated_for_window_payloads() -> None:
    tracker = DigestTracker("inc-1", window=4)
    d = {CPU: 1.0}
    payload(tracker, d)
    for _ in range(4):
        payload(tracker, d)
    d[CPU] = 2.0
    seen = [payload(tracker, d)["digests"] for _ in range(6)]
    assert seen == [{CPU: 2.0}] * 4 + [{}] * 2


def test_full_payload_carries_every_digest() -> None:
    tracker = DigestTracker("inc-1", window=1)
    d = {CPU: 1.0, NET: 3.0}
    payload(tracker, d)
    assert payload(tracker, d)["digests"] == {}
    full = decode_payload(tracker.full_payload(d))
    assert (full["seq"], full["since"], full["full"]) == (3, 0, True)
    assert full["digests"] == {CPU: 1.0, NET5: 3.0}
    assert payload(tracker, d)["digests"] == {}
    d[NET] = 4.0
    full = decode_payload(tracker.full_payload(d))
    assert full["digests"] == {CPU: 1.0, NET5: 4.0}
    # the change went out in the full payload; a window of 1 does not repeat it
    assert payload(tracker, d)["digests"] == {}


def test_other_keys_and_values_are_skipped() -> None:
    tracker = DigestTracker("inc-1")
    d: dict[Any, Any] = {
        "latency": 0.01,
        ("odd", "length"): 1.0,
        ("a", "b", "c", "d", "e", "f"): 1.0,
        CPU: "not a number",
        READ: None,
        NET: True,  # bool is an int
        ("execute", "s", "p", "big", "count"): 10**400,  # beyond a double
    }
    assert payload(tracker, d)["digests"] == {NET5: 1.0}
    with pytest.raises(TypeError):
        tracker.payload([(CPU, 1.0)])


class Label:
    """A label that is not a str; counts its conversions."""

    calls = 0

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        Label.calls += 1
        return self.text


def test_labels_that_are_not_str_are_converted_once() -> None:
    tracker = DigestTracker("inc-1", window=1)
    Label.calls = 0
    key = ("execute", None, "inc", Label("I/O"), 7)
    d = {key: 1.0}
    assert payload(tracker, d)["digests"] == {("execute", "None", "inc", "I/O", "7"): 1.0}
    d[key] = 2.0
    assert payload(tracker, d)["digests"] == {("execute", "None", "inc", "I/O", "7"): 2.0}
    decode_payload(tracker.full_payload(d))
    assert Label.calls == 1


def test_labels_without_utf8_are_skipped() -> None:
    tracker = DigestTracker("inc-1")
    d = {("execute", "s", "p", "bad\ud800", "seconds"): 1.0, CPU: 1.0}
    assert payload(tracker, d)["digests"] == {CPU: 1.0}
    assert decode_payload(tracker.full_payload(d))["digests"] == {CPU: 1.0}


def test_label_conversion_may_change_the_dict() -> None:
    tracker = DigestTracker("inc-1")
    d: dict[Any, Any] = {}

    class Grower:
        def __str__(self) -> str:
            d[("ctx", f"a{len(d)}", "s")] = 1.0
            return "grower"

    d[("ctx", Grower(), "s")] = 5.0
    digests = payload(tracker, d)["digests"]
    assert digests[("ctx", "", "", "grower", "s")] == 5.0


def test_records_do_not_ride_payloads() -> None:
    # Instrumentation records travel on the worker's event stream, not here.
    tracker = DigestTracker("inc-1")
    assert not hasattr(tracker, "queue_record")
    with pytest.raises(TypeError):
        DigestTracker("inc-1", 4, 10)


def test_attributes() -> None:
    tracker = DigestTracker("inc-é")
    assert tracker.incarnation == "inc-é"
    assert tracker.window == 4
    assert tracker.seq == 0
    tracker.window = 7
    assert tracker.window == 7
    with pytest.raises(ValueError):
        tracker.window = 0
    with pytest.raises(AttributeError):
        tracker.seq = 3
    with pytest.raises(ValueError):
        DigestTracker("x", window=0)
    with pytest.raises(TypeError):
        DigestTracker(5)
    assert decode_payload(tracker.payload({}))["incarnation"] == "inc-é"


GATHER = ("gather-dep", "span-a", "inc", "network", "seconds")


def test_followed_contexts_are_read_from_changed_the_rest_every_time() -> None:
    tracker = DigestTracker("inc-1", window=1, followed=("execute",))
    assert tracker.followed == ("execute",)
    d: dict[Any, Any] = {CPU: 1.0, NET: 2.0, GATHER: 3.0}
    # the first payload accounts for every key, whatever changed says
    assert decode_payload(tracker.payload(d, {}))["digests"] == {CPU: 1.0, NET5: 2.0, GATHER: 3.0}
    d[CPU], d[NET], d[GATHER] = 1.5, 2.5, 3.5
    # contexts not followed are read every time; a followed key only when it changed
    assert decode_payload(tracker.payload(d, {}))["digests"] == {NET5: 2.5, GATHER: 3.5}
    assert decode_payload(tracker.payload(d, {CPU: 0.5}))["digests"] == {CPU: 1.5}
    # a new key of a context not followed: digests_total grew past what the tracker knows
    d[("get-data", "serialize", "seconds")] = 0.25
    new = decode_payload(tracker.payload(d, {}))["digests"]
    assert new == {("get-data", "", "", "serialize", "seconds"): 0.25}
    # a new followed key arrives in changed
    d[READ] = 4096
    assert decode_payload(tracker.payload(d, {READ: 4096}))["digests"] == {READ: 4096.0}
    # a full payload reads every key
    d[CPU] = 9.0
    assert decode_payload(tracker.full_payload(d))["digests"][CPU] == 9.0
    with pytest.raises(TypeError, match="changed must be a dict"):
        tracker.payload(d, [CPU])


def test_payloads_from_changes_equal_payloads_from_scans() -> None:
    """Fed Dask's changes, the tracker sends what scanning every key would, payload by payload."""
    rng = random.Random(7)
    scanning = DigestTracker("inc-1", window=3)
    following = DigestTracker("inc-1", window=3, followed=("execute",))
    contexts = ("execute", "gather-dep")
    d: dict[Any, Any] = {}
    for beat in range(300):
        changed: dict[Any, float] = {}
        for _ in range(rng.randrange(6)):
            if rng.random() < 0.3:
                key: Any = ("tick", f"t{rng.randrange(3)}", "seconds")
            else:
                key = (rng.choice(contexts), f"s{rng.randrange(40)}", "p", "a", "seconds")
            delta = rng.choice((0.5, 1, 0.0))  # a zero delta changes nothing
            d[key] = d.get(key, 0) + delta
            if key[0] == "execute":
                changed[key] = changed.get(key, 0) + delta
        expected = decode_payload(scanning.payload(d))
        got = decode_payload(following.payload(d, changed))
        assert got == expected, beat


def test_activities_sent_apart_are_never_in_a_payload() -> None:
    """The phases travel with each task's records: a payload carrying them too would
    make the scheduler count them twice."""
    phase = ("execute", "span-a", "inc", "phase:user", "wall-seconds")
    codec = ("execute", "span-a", "inc", "decompress:ZLIB", "bytes")
    dask_own = ("execute", "span-a", "inc", "decompress", "seconds")  # spill, Dask's
    tracker = DigestTracker("inc-1", sent_apart=("phase:", "phase-", "decompress:"))
    assert tracker.sent_apart == ("phase:", "phase-", "decompress:")
    d: dict[Any, Any] = {CPU: 1.0, phase: 2.0, codec: 3.0, dask_own: 0.5, NET: 1}
    assert payload(tracker, d)["digests"] == {CPU: 1.0, dask_own: 0.5, NET5: 1.0}
    d[phase] = 4.0
    assert phase not in payload(tracker, d)["digests"]
    assert set(decode_payload(tracker.full_payload(d))["digests"]) == {CPU, dask_own, NET5}
    with pytest.raises(TypeError, match="sent_apart"):
        DigestTracker("inc-1", sent_apart=(1,))
