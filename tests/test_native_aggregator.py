"""roastcoffea._native.Aggregator: the transition hook, tables, series, payloads, snapshots.

The hook is called with Dask's real call shape (SchedulerState._transition
passes ``stimulus_id`` and, on processing->memory, the eight fields of
TaskFinishedMsg as keywords).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import pytest
from dask.utils import key_split
from distributed.utils import key_split_group
from test_native_keysplit import EDGE_CASES, corpus

from roastcoffea import _native

Aggregator = _native.Aggregator
DigestTracker = _native.DigestTracker
decode_snapshot = _native.decode_snapshot
state_from_json = _native.state_from_json

W1 = "tcp://127.0.0.1:40001"
W2 = "tcp://127.0.0.1:40002"
T0 = 1_700_000_000.0


def finished(
    agg: Aggregator,
    key: Any,
    worker: str = W1,
    compute: tuple[float, float] = (T0 + 1.0, T0 + 1.5),
    transfers: tuple[tuple[float, float], ...] = (),
    nbytes: Any = 1000,
    **override: Any,
) -> None:
    """processing -> memory, exactly as Scheduler.stimulus_task_finished reports it."""
    startstops: Any = [
        {"action": "transfer", "start": a, "stop": b, "source": W2} for a, b in transfers
    ]
    startstops.append({"action": "compute", "start": compute[0], "stop": compute[1]})
    kwargs = {
        "worker": worker,
        "metadata": {},
        "nbytes": nbytes,
        "type": b"\x80\x05\x95pickled-type",
        "typename": "int",
        "thread": 140_000_000_000,
        "startstops": startstops,
        "status": "OK",
    }
    kwargs.update(override)
    agg.transition(key, "processing", "memory", stimulus_id="task-finished-1", **kwargs)


def erred(agg: Aggregator, key: Any, worker: str | None = W1) -> None:
    kwargs: dict[str, Any] = {
        "cause": key,
        "exception": b"exc",
        "traceback": b"tb",
        "exception_text": "ZeroDivisionError()",
        "traceback_text": "...",
        "thread": 1,
        "startstops": [{"action": "compute", "start": T0, "stop": T0 + 0.1}],
        "status": "error",
    }
    if worker is not None:
        kwargs["worker"] = worker
    agg.transition(key, "processing", "erred", stimulus_id="task-erred-1", **kwargs)


def lifecycle(agg: Aggregator, key: Any, **kw: Any) -> None:
    """The six transitions of a computed task, as plugins see them."""
    agg.transition(key, "released", "waiting", stimulus_id="update-graph")
    agg.transition(key, "waiting", "processing", stimulus_id="update-graph")
    finished(agg, key, **kw)
    agg.transition(key, "memory", "released", stimulus_id="client-releases-keys")
    agg.transition(key, "released", "forgotten", stimulus_id="client-releases-keys")


def rows(snapshot: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {(r["worker"], r["span"], r["prefix"]): r for r in snapshot["tasks"]}


def same(a: Any, b: Any) -> bool:
    """Equality in which NaN equals NaN."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    return type(a) is type(b) and a == b


# ---- the transition hook ---------------------------------------------------


def test_hook_counts_tasks_compute_transfer_and_bytes_per_prefix() -> None:
    agg = Aggregator(started=T0)
    for i in range(10):
        lifecycle(agg, f"inc-{i:032x}"[:40], compute=(T0 + i, T0 + i + 0.25), nbytes=100 + i)
    for i in range(4):
        lifecycle(
            agg,
            (f"getitem-{'a1' * 16}", i),
            worker=W2,
            compute=(T0 + 20 + i, T0 + 20.5 + i),
            transfers=((T0 + 19, T0 + 19.125), (T0 + 19.5, T0 + 19.75)),
            nbytes=1 << 20,
        )
    assert agg.hook_errors == 0
    assert agg.hook_calls == 14 * 5
    d = agg.to_dict()
    inc = d["prefixes"]["inc"]
    assert inc["tasks"] == 10
    assert inc["transitions"] == 50
    assert inc["erred"] == 0
    assert inc["compute_seconds"] == pytest.approx(10 * 0.25)
    assert inc["transfer_seconds"] == 0
    assert inc["output_bytes"] == sum(100 + i for i in range(10))
    assert inc["first_start"] == T0
    assert inc["last_stop"] == T0 + 9.25
    gi = d["prefixes"]["getitem"]
    assert gi["tasks"] == 4
    assert gi["compute_seconds"] == pytest.approx(4 * 0.5)
    assert gi["transfer_seconds"] == pytest.approx(4 * 0.375)
    assert gi["output_bytes"] == 4 << 20
    r = rows(d)
    assert r[(W1, "", "inc")]["tasks"] == 10
    assert r[(W1, "", "inc")]["transitions"] == 10
    assert r[("", "", "inc")]["transitions"] == 40
    assert r[("", "", "inc")]["tasks"] == 0
    assert d["worker_tasks"][W1]["tasks"] == 10
    assert d["worker_tasks"][W2]["tasks"] == 4
    assert d["span_tasks"][""]["transitions"] == 70
    assert d["counters"]["events"] == 70
    assert d["counters"]["hook_calls"] == 70
    assert d["counters"]["dropped_events"] == 0


def test_hook_takes_the_positional_form_and_extra_args() -> None:
    agg = Aggregator(started=T0)
    agg.transition("x-1", "released", "waiting")
    agg.transition("x-1", "waiting", "processing", "extra", 1, stimulus_id="s")
    agg.drain()
    assert agg.hook_errors == 0
    assert agg.to_dict()["prefixes"]["x"]["transitions"] == 2


def test_hook_counts_erred() -> None:
    agg = Aggregator(started=T0)
    erred(agg, "div-1")
    erred(agg, "div-2", worker=None)
    agg.transition("div-3", "waiting", "erred", stimulus_id="s", cause="div-1")
    d = agg.to_dict()
    assert agg.hook_errors == 0
    assert d["prefixes"]["div"]["erred"] == 3
    assert d["prefixes"]["div"]["tasks"] == 0
    assert d["prefixes"]["div"]["compute_seconds"] == 0
    assert rows(d)[(W1, "", "div")]["erred"] == 1
    assert rows(d)[("", "", "div")]["erred"] == 2


def test_hook_prefixes_follow_key_split() -> None:
    agg = Aggregator(started=T0)
    keys = [
        ("('x-2', 1)", "x"),
        (("y-2", 1), "y"),
        ((("z-1", 0), 1), "z"),
        (b"hello-world-1", "hello-world"),
        ("ae05086432ca935f6eba409a8ecd4896", "data"),
        (5, "Other"),
        (None, "Other"),
        ("λ-1", "λ"),
    ]
    for key, _ in keys:
        agg.transition(key, "released", "waiting", stimulus_id="s")
    prefixes = agg.to_dict()["prefixes"]
    assert agg.hook_errors == 0
    for _, prefix in keys:
        assert prefixes[prefix]["transitions"] >= 1
    for key, _ in keys:  # second time: split again, or the held last key
        agg.transition(key, "waiting", "released", stimulus_id="s")
    again = agg.to_dict()["prefixes"]
    for _, prefix in keys:
        assert again[prefix]["transitions"] == prefixes[prefix]["transitions"] + sum(
            1 for _, p in keys if p == prefix
        )


def test_hook_prefixes_equal_dask_key_split_for_many_keys() -> None:
    """Differential through the hook: dask's key_split for
    20,000 generated keys, each seen twice in a row like a task's first
    transitions, and again as equal copies made of new objects."""
    keys = list(dict.fromkeys(k for k in corpus(20_000, seed=11) if splittable(k)))
    agg = Aggregator(started=T0)
    for key in keys:
        agg.transition(key, "released", "waiting", stimulus_id="s")
        agg.transition(key, "waiting", "queued", stimulus_id="s")
    for key in keys:
        agg.transition(copy_key(key), "queued", "processing", stimulus_id="s")
    assert agg.hook_errors == 0
    want: dict[str, int] = {}
    for key in keys:
        want[key_split(key)] = want.get(key_split(key), 0) + 3
    got = {p: row["transitions"] for p, row in agg.to_dict()["prefixes"].items()}
    assert got == want


def splittable(key: Any) -> bool:
    """Keys dask splits and the hook can read (it reads str as UTF-8, so a lone
    surrogate is a counted error there)."""
    try:
        hash(key)
        key_split(key)
        while isinstance(key, tuple):
            key = key[0]
        if isinstance(key, str):
            key.encode()
    except Exception:
        return False
    return True


def copy_key(key: Any) -> Any:
    """An equal key made of new objects."""
    if isinstance(key, tuple):
        return tuple(copy_key(k) for k in key)
    if isinstance(key, str):
        return "".join(list(key))
    return key


def test_hook_reads_spans_from_the_tasks_dict() -> None:
    agg = Aggregator(started=T0)
    tasks = {
        "a-1": SimpleNamespace(group=SimpleNamespace(span_id="span-a")),
        ("b-1", 0): SimpleNamespace(group=SimpleNamespace(span_id="span-b")),
        "c-1": SimpleNamespace(group=SimpleNamespace(span_id=None)),
        "d-1": SimpleNamespace(group=SimpleNamespace()),  # no span_id attribute
    }
    agg.set_span_lookup(tasks)
    finished(agg, "a-1")
    finished(agg, "a-1")
    finished(agg, ("b-1", 0))
    erred(agg, ("b-1", 0))
    finished(agg, "c-1")
    finished(agg, "gone-1")  # not in tasks: no span
    agg.transition("a-1", "released", "waiting", stimulus_id="s")  # not done: no span read
    assert agg.hook_errors == 0
    finished(agg, "d-1")
    assert agg.hook_errors == 1
    d = agg.to_dict()
    assert d["errors"] == {"transition:span-lookup": 1}
    r = rows(d)
    assert r[(W1, "span-a", "a")]["tasks"] == 2
    assert r[(W1, "span-b", "b")]["tasks"] == 1
    assert r[(W1, "span-b", "b")]["erred"] == 1
    assert r[(W1, "", "c")]["tasks"] == 1
    assert r[(W1, "", "gone")]["tasks"] == 1
    assert r[(W1, "", "d")]["tasks"] == 1  # the task is still counted
    assert r[("", "", "a")]["transitions"] == 1
    assert d["span_tasks"]["span-a"]["tasks"] == 2
    agg.set_span_lookup(None)
    finished(agg, "a-1")
    assert rows(agg.to_dict())[(W1, "", "a")]["tasks"] == 1
    with pytest.raises(TypeError):
        agg.set_span_lookup([1, 2])
    with pytest.raises(TypeError):
        agg.set_span_lookup({}, [1, 2])


def test_a_task_placed_in_its_runs_span_is_filed_there_until_forgotten() -> None:
    """The runs dict wins over the group's span; a forgotten task leaves it."""
    agg = Aggregator(started=T0)
    group = SimpleNamespace(span_id="first-run")
    tasks = {"p-1": SimpleNamespace(group=group), "p-2": SimpleNamespace(group=group)}
    runs = {"p-2": "second-run"}
    agg.set_span_lookup(tasks, None, runs)
    finished(agg, "p-1")
    finished(agg, "p-2")
    erred(agg, "p-2")
    r = rows(agg.to_dict())
    assert r[(W1, "first-run", "p")]["tasks"] == 1
    assert r[(W1, "second-run", "p")]["tasks"] == 1 and r[(W1, "second-run", "p")]["erred"] == 1
    agg.transition("p-1", "released", "forgotten", stimulus_id="s")  # not a run's: kept
    agg.transition("p-2", "released", "forgotten", stimulus_id="s")
    assert runs == {}
    finished(agg, "p-2")  # computed again under the same key: the group's span
    assert rows(agg.to_dict())[(W1, "first-run", "p")]["tasks"] == 2
    assert agg.hook_errors == 0
    with pytest.raises(TypeError):
        agg.set_span_lookup(tasks, None, [1])


def test_a_tasks_digests_sent_with_its_records_add_up_beside_the_payloads() -> None:
    agg = Aggregator(started=T0)
    labels = [("phase:user", "wall-seconds"), ("phase-tasks", "count")]
    agg.add_digests(W1, "execute", "span-a", "proc", labels, [0.5, 1])
    agg.add_digests(W1, "execute", "span-a", "proc", labels, [0.25, 1.0])
    agg.add_digests(W1, "execute", None, "proc", labels[:1], [1.0])
    digests = agg.to_dict()["digests"]
    assert digests[(W1, "execute", "span-a", "proc", "phase:user", "wall-seconds")] == 0.75
    assert digests[(W1, "execute", "span-a", "proc", "phase-tasks", "count")] == 2.0
    assert digests[(W1, "execute", "", "proc", "phase:user", "wall-seconds")] == 1.0
    with pytest.raises(ValueError, match="2 labels for 1 values"):
        agg.add_digests(W1, "execute", "s", "p", labels, [1.0])
    with pytest.raises(TypeError, match="activity, unit"):
        agg.add_digests(W1, "execute", "s", "p", [("a", 1)], [1.0])
    with pytest.raises(TypeError):
        agg.add_digests(W1, "execute", "s", "p", labels[:1], ["x"])
    with pytest.raises(TypeError, match="span"):
        agg.add_digests(W1, "execute", 3, "p", labels[:1], [1.0])


class Group:
    """distributed's TaskGroup as the hook reads it (slotted, like Dask's)."""

    __slots__ = ("name", "span_id")

    def __init__(self, name: Any, span_id: str | None) -> None:
        self.name, self.span_id = name, span_id


def scheduler_dicts(keys: list[Any]) -> tuple[dict[Any, Any], dict[Any, Group]]:
    """tasks and task_groups as the scheduler builds them: one group per
    key_split_group name, here each with a span of its own."""
    task_groups: dict[Any, Group] = {}
    tasks: dict[Any, Any] = {}
    for key in keys:
        name = key_split_group(key)
        group = task_groups.setdefault(name, Group(name, f"span-{len(task_groups)}"))
        tasks[key] = SimpleNamespace(group=group)
    return tasks, task_groups


FAST_KEYS = ["a-1", "a-2", "b-1", ("c-1", 0), ("c-1", 1), (("d-1", 0), 2), "x", "ǅ-abc-3"]
SLOW_KEYS = ["('e-1', 0)", "<f.g object at 0x1>", "ae05086432ca935f6eba409a8ecd4896", b"h-1"]


def test_hook_finds_groups_by_name_without_the_tasks_dict() -> None:
    """Tuple keys and plain str keys need only task_groups; the other forms
    (and a group task_groups lacks) are found through the tasks dict."""
    tasks, task_groups = scheduler_dicts(FAST_KEYS + SLOW_KEYS)
    expected = {key: tasks[key].group.span_id for key in FAST_KEYS + SLOW_KEYS}
    agg = Aggregator(started=T0)
    agg.set_span_lookup({key: tasks[key] for key in SLOW_KEYS}, task_groups)
    for key in FAST_KEYS + SLOW_KEYS:
        finished(agg, key)
    del task_groups[key_split_group(SLOW_KEYS[0])]  # dropped: the tasks dict answers
    finished(agg, SLOW_KEYS[0])
    assert agg.hook_errors == 0
    spans = {(r["span"], r["prefix"]): r["tasks"] for r in agg.to_dict()["tasks"]}
    want: dict[tuple[str, str], int] = {}
    for key in [*FAST_KEYS, *SLOW_KEYS, SLOW_KEYS[0]]:
        at = (expected[key], key_split(key))
        want[at] = want.get(at, 0) + 1
    assert spans == want


def test_task_groups_give_the_span_of_the_tasks_dict_for_every_key_form() -> None:
    """Differential: with the scheduler's two dicts, the spans read through
    task_groups equal tasks[key].group.span_id for the key_split edge cases
    and 20,000 generated keys."""
    keys = [k for k in EDGE_CASES + corpus(20_000, seed=7) if hashable_key(k)]
    keys = list(dict.fromkeys(keys))
    tasks, task_groups = scheduler_dicts(keys)
    by_groups, by_tasks = Aggregator(started=T0), Aggregator(started=T0)
    by_groups.set_span_lookup(tasks, task_groups)
    by_tasks.set_span_lookup(tasks)
    for key in keys:
        finished(by_groups, key)
        finished(by_tasks, key)
    # keys the hook cannot split (surrogates, empty tuples) fail alike in both
    assert by_groups.to_dict()["errors"] == by_tasks.to_dict()["errors"]
    assert "transition:span-lookup" not in by_groups.to_dict()["errors"]
    assert rows(by_groups.to_dict()) == rows(by_tasks.to_dict())
    assert len({r["span"] for r in by_groups.to_dict()["tasks"]}) > 1000


def hashable_key(key: Any) -> bool:
    """Keys the scheduler could hold: hashable, and accepted by key_split_group."""
    try:
        hash(key)
        key_split_group(key)
    except Exception:
        return False
    return True


def test_malformed_calls_are_counted_never_raised() -> None:
    agg = Aggregator(started=T0)
    agg.set_span_lookup({})
    calls: list[tuple[tuple[Any, ...], dict[str, Any], str]] = [
        ((), {}, "transition:missing-args"),
        (("x-1", "processing"), {"stimulus_id": "s"}, "transition:missing-args"),
        (("x-1", "processing", 5), {}, "transition:bad-state"),
        (("x-1", None, "memory"), {}, "transition:bad-state"),
        (([1, 2], "released", "waiting"), {}, "transition:unhashable-key"),
        (((), "released", "waiting"), {}, "transition:empty-tuple-key"),
        ((b"\xff-1", "released", "waiting"), {}, "transition:bad-key"),
        (("\ud800-1", "released", "waiting"), {}, "transition:bad-key"),
    ]
    for args, kwargs, _ in calls:
        assert agg.transition(*args, **kwargs) is None
    # processing -> memory with broken fields: counted, the task still recorded
    finished(agg, "ss-1", startstops="garbage")
    finished(agg, "ss-2", startstops=[1, 2])
    finished(agg, "ss-3", startstops=[{"action": "compute"}])
    finished(agg, "ss-4", startstops=[{"action": "compute", "start": "a", "stop": 1.0}])
    finished(agg, "ss-5", startstops=[{"start": 1.0, "stop": 2.0}])
    finished(agg, "nb-1", nbytes="100")
    finished(agg, "nb-2", nbytes=-1)
    finished(agg, "nb-3", nbytes=1 << 70)
    finished(agg, "wk-1", worker=5)
    agg.transition(("t-1", [1]), "processing", "memory", stimulus_id="s", worker=W1)
    expected = {
        "transition:missing-args": 2,
        "transition:bad-state": 2,
        "transition:unhashable-key": 2,
        "transition:empty-tuple-key": 1,
        "transition:bad-key": 2,
        "transition:bad-startstops": 5,
        "transition:bad-nbytes": 3,
        "transition:bad-worker": 1,
    }
    assert agg.hook_errors == sum(expected.values())
    d = agg.to_dict()
    assert d["errors"] == expected
    prefixes = d["prefixes"]
    assert prefixes["ss"]["tasks"] == 5
    assert prefixes["ss"]["compute_seconds"] == 0
    assert prefixes["nb"]["tasks"] == 3
    assert prefixes["nb"]["output_bytes"] == 0
    assert rows(d)[("", "", "wk")]["tasks"] == 1
    assert rows(d)[(W1, "", "t")]["tasks"] == 1
    assert "x" not in prefixes
    assert d["counters"]["hook_errors"] == agg.hook_errors


def test_optional_fields_may_be_absent_or_none() -> None:
    agg = Aggregator(started=T0)
    agg.transition("old-1", "processing", "memory", stimulus_id="s", worker=W1)
    agg.transition("old-2", "processing", "memory", worker=W1, nbytes=None, startstops=())
    agg.transition("old-3", "processing", "memory", worker=None)
    assert agg.hook_errors == 0
    d = agg.to_dict()
    assert rows(d)[(W1, "", "old")]["tasks"] == 2
    assert rows(d)[("", "", "old")]["tasks"] == 1


def test_keyword_names_match_by_text_too() -> None:
    agg = Aggregator(started=T0)
    names = {"".join(["wor", "ker"]): W1, "".join(["nby", "tes"]): 7}
    agg.transition("k-1", "processing", "memory", **names)
    d = agg.to_dict()
    assert rows(d)[(W1, "", "k")]["output_bytes"] == 7


def test_ring_drops_are_counted_without_auto_drain() -> None:
    agg = Aggregator(ring_capacity=8, auto_drain=False, started=T0)
    for i in range(20):
        agg.transition(f"x-{i}", "released", "waiting", stimulus_id="s")
    counters = agg.counters
    assert counters["ring_capacity"] == 8
    assert counters["ring_pushed"] == 8
    assert counters["ring_pending"] == 8
    assert counters["dropped_events"] == 12
    assert counters["hook_errors"] == 0
    assert agg.drain() == 8
    assert agg.drain() == 0
    d = agg.to_dict()
    assert d["counters"]["events"] == 8
    assert d["counters"]["dropped_events"] == 12
    assert d["prefixes"]["x"]["transitions"] == 8


def test_auto_drain_keeps_drops_at_zero() -> None:
    agg = Aggregator(ring_capacity=8, started=T0)
    for i in range(1000):
        agg.transition(f"x-{i}", "released", "waiting", stimulus_id="s")
        assert agg.counters["ring_pending"] <= 6
    assert agg.counters["dropped_events"] == 0
    assert agg.to_dict()["prefixes"]["x"]["transitions"] == 1000


def test_hook_cost_is_measured() -> None:
    agg = Aggregator(started=T0)
    assert agg.counters["hook_ns_per_call"] is None
    for i in range(200):
        lifecycle(agg, f"x-{i}")
    ns = agg.counters["hook_ns_per_call"]
    assert isinstance(ns, float)
    assert 0 < ns < 1e6


def test_hook_profile_counts_every_kind_and_times_each() -> None:
    agg = Aggregator(started=T0)
    assert agg.hook_profile() == {"drains": {"calls": 0, "timed": 0, "ns_per_call": 0.0}}
    tasks = 2000  # 5 kinds alternating in a fixed pattern: a fixed stride would miss some
    for i in range(tasks):
        lifecycle(agg, f"x-{i}")
    agg.transition("y", "released", "no-such-state", stimulus_id="s")
    profile = agg.hook_profile()
    kinds = ("released->waiting", "waiting->processing", "processing->memory")
    kinds += ("memory->released", "released->forgotten")
    assert {k: profile[k]["calls"] for k in kinds} == dict.fromkeys(kinds, tasks)
    assert profile["released->Other"]["calls"] == 1  # a state this build does not name
    drains = profile.pop("drains")
    assert drains["calls"] == agg.counters["hook_calls"] and drains["ns_per_call"] >= 0
    assert sum(v["calls"] for v in profile.values()) == agg.counters["hook_calls"]
    for kind in kinds:  # the draws are seeded: the same calls are timed in every run
        assert 0 < profile[kind]["timed"] <= tasks and profile[kind]["ns_per_call"] > 0, kind


def test_constructor_validates() -> None:
    with pytest.raises(ValueError):
        Aggregator(ring_capacity=0)
    with pytest.raises(ValueError):
        Aggregator(series_cap_bytes=100)
    with pytest.raises(ValueError):
        Aggregator(started=float("nan"))
    with pytest.raises(TypeError):
        Aggregator(131072)  # keyword-only
    started = Aggregator(started=T0).to_dict()["started"]
    assert started == T0


# ---- workers, series, spans, errors ------------------------------------------


def test_workers_and_series() -> None:
    agg = Aggregator(started=T0)
    agg.worker_seen(W1, "worker-0", T0 + 1)
    agg.worker_seen(W2, 1, T0 + 2)  # names are str() of ws.name
    agg.worker_removed(W2, T0 + 9)
    values = (1024.0, 4096.0, 2.0, 3.0, 1.0, 512.0, 0.5, 150.0, None, 10.0, 20.0, 30.0, 40.0)
    values += (2.0, 5.0, 1.5, 0.25)  # the node's cores, runnable threads, load, steal %
    agg.sample(W1, T0 + 1.25, (*values, T0 + 1.0))
    agg.sample(W1, T0 + 2.5, (2048.0, *values[1:], T0 + 2.0))
    agg.sample(W1, T0 + 2.0, (*values, T0))  # earlier than the last sample: refused, counted
    d = agg.to_dict()
    w1, w2 = d["workers"][W1], d["workers"][W2]
    assert w1["name"] == "worker-0"
    assert w1["added"] == T0 + 1
    assert w1["removed"] is None
    assert w2["name"] == "1"
    assert w2["removed"] == T0 + 9
    s = d["series"][W1]
    assert s["t_first"] == [T0 + 1.25, T0 + 2.5]
    assert s["t_last"] == [T0 + 1.25, T0 + 2.5]
    assert s["count"] == [1, 1]
    cols = s["columns"]
    assert set(cols) == {
        "memory", "memory_limit", "nthreads", "processing", "executing", "managed",
        "occupancy", "cpu", "spilled", "net_read", "net_write", "disk_read", "disk_write",
        "node_cores", "node_runnable", "node_load", "node_steal", "last_seen",
    }  # fmt: skip
    assert cols["node_runnable"]["mean"] == [5.0, 5.0] and cols["node_steal"]["max"] == [0.25] * 2
    assert cols["memory"]["mean"] == [1024.0, 2048.0]
    assert cols["memory"]["min"] == [1024.0, 2048.0]
    assert cols["cpu"]["max"] == [150.0, 150.0]
    assert cols["occupancy"]["mean"] == [0.5, 0.5]
    assert all(math.isnan(v) for v in cols["spilled"]["mean"])
    assert cols["last_seen"]["mean"] == pytest.approx([T0 + 1.0, T0 + 2.0])
    assert d["counters"]["series_samples"] == 2
    with pytest.raises(ValueError):
        agg.sample(W1, T0 + 3, (1.0,) * 17)
    with pytest.raises(TypeError):
        agg.sample(W1, T0 + 3, ("x",) * 18)


def test_spans_and_errors() -> None:
    agg = Aggregator(started=T0)
    agg.set_span("span-a", None, ("default",))
    agg.set_span("span-b", "span-a", ("analysis", "histograms"))
    agg.set_span("span-c", "span-a", ())
    agg.count_error("sampler:tick")
    agg.count_error("sampler:tick", 2)
    agg.count_error(where="flush:worker", n=5)
    d = agg.to_dict()
    assert d["spans"] == {
        "span-a": {"parent": None, "name": ("default",)},
        "span-b": {"parent": "span-a", "name": ("analysis", "histograms")},
        "span-c": {"parent": "span-a", "name": ()},
    }
    assert d["errors"] == {"sampler:tick": 3, "flush:worker": 5}
    with pytest.raises(TypeError):
        agg.set_span("s", None, "not-a-tuple")
    with pytest.raises(ValueError):
        agg.count_error("x", -1)


# ---- worker payloads ----------------------------------------------------------


def digests(cpu: float, net: float = 2.0) -> dict[Any, Any]:
    return {
        ("execute", "span-a", "inc", "thread-cpu", "seconds"): cpu,
        ("execute", "span-a", "inc", "memory-read", "bytes"): 4096,
        ("gather-dep", "network", "seconds"): net,
        "latency": 0.001,
        ("odd", "length"): 1.0,
    }


def test_ingest_applies_tracker_payloads() -> None:
    agg = Aggregator(started=T0)
    agg.worker_seen(W1, "w1", T0)
    tracker = DigestTracker("inc-1")
    assert agg.ingest(W1, tracker.payload(digests(1.5)), T0 + 1) is False
    d = agg.to_dict()
    assert d["digests"] == {
        (W1, "execute", "span-a", "inc", "thread-cpu", "seconds"): 1.5,
        (W1, "execute", "span-a", "inc", "memory-read", "bytes"): 4096.0,
        (W1, "gather-dep", "", "", "network", "seconds"): 2.0,
    }
    w = d["workers"][W1]
    assert w["incarnation"] == "inc-1"
    assert w["payloads"] == 1
    assert w["last_seq"] == 1
    assert w["payload_bytes"] > 0
    assert d["counters"]["payloads"] == 1
    # cumulative values are assigned
    assert agg.ingest(W1, tracker.payload(digests(3.0)), T0 + 2) is False
    d = agg.to_dict()
    assert d["digests"][(W1, "execute", "span-a", "inc", "thread-cpu", "seconds")] == 3.0


def test_records_sent_on_the_event_stream_are_kept_once_each() -> None:
    agg = Aggregator(started=T0, record_cap_bytes=200)
    assert agg.add_record(W1, b"chunk-1", T0 + 1, "span-a") is True
    assert agg.add_record(W1, memoryview(b"chunk-1"), T0 + 2, "span-a") is True  # recomputed
    assert agg.add_record(W2, b"x" * 500, T0 + 3) is False  # larger than the cap: counted
    d = agg.to_dict()
    assert d["records"] == [
        {"worker": W1, "span": "span-a", "seq": 0, "time": T0 + 1, "data": b"chunk-1"},
        {"worker": W1, "span": "span-a", "seq": 0, "time": T0 + 2, "data": b"chunk-1"},
    ]
    assert (d["counters"]["records"], d["counters"]["records_dropped"]) == (2, 1)
    with pytest.raises(TypeError):
        agg.add_record(W1, "text", T0)
    with pytest.raises(TypeError):
        agg.add_record(W1, b"x", T0, 5)


def test_snapshots_of_a_span_carry_its_records_and_a_release_drops_them() -> None:
    agg = Aggregator(started=T0)
    agg.set_span("outer", None, ("outer",))
    agg.set_span("inner", "outer", ("outer", "inner"))
    for i, span in enumerate(["outer", "inner", "other", None, "inner"]):
        assert agg.add_record(W1, f"r{i}".encode(), T0 + i, span)
    kept = decode_snapshot(agg.snapshot(spans=["outer", "inner"]))["records"]
    assert [r["data"] for r in kept] == [b"r0", b"r1", b"r4"]
    assert [r["data"] for r in decode_snapshot(agg.snapshot())["records"]] == [
        b"r0", b"r1", b"r2", b"r3", b"r4",
    ]  # fmt: skip
    assert agg.release_records(["inner", "never-seen"]) == 2
    assert agg.release_records([]) == 0
    assert [r["data"] for r in agg.to_dict()["records"]] == [b"r0", b"r2", b"r3"]
    assert agg.counters["records_dropped"] == 0
    with pytest.raises(TypeError):
        agg.release_records("inner")


def test_a_full_record_store_drops_its_oldest_records() -> None:
    agg = Aggregator(started=T0, record_cap_bytes=10_000)
    data = b"x" * 900
    for i in range(30):
        assert agg.add_record(W1, data, T0 + i, "span")
    times = [r["time"] for r in agg.to_dict()["records"]]
    assert times == sorted(times) and times[-1] == T0 + 29  # the newest are kept
    counters = agg.counters
    assert counters["records"] == 30
    assert counters["records_dropped"] == 30 - len(times) > 0


def test_ingest_reports_a_gap_and_a_flush_repairs_it() -> None:
    agg = Aggregator(started=T0)
    agg.worker_seen(W1, "w1", T0)
    tracker = DigestTracker("inc-1", window=2)
    assert agg.ingest(W1, tracker.payload(digests(1.0)), T0 + 1) is False
    missed = [tracker.payload(digests(float(i))) for i in range(2, 6)]
    assert agg.ingest(W1, missed[-1], T0 + 2) is True
    assert agg.to_dict()["workers"][W1]["gaps"] == 1
    assert agg.ingest(W1, tracker.full_payload(digests(9.0, net=7.0)), T0 + 3) is False
    d = agg.to_dict()
    assert d["workers"][W1]["flushes"] == 1
    assert d["digests"][(W1, "execute", "span-a", "inc", "thread-cpu", "seconds")] == 9.0
    assert d["digests"][(W1, "gather-dep", "", "", "network", "seconds")] == 7.0


def test_ingest_never_raises_on_malformed_payloads() -> None:
    agg = Aggregator(started=T0)
    for bad in (b"", b"\xc1", b"not msgpack", None, "text", 12, {"v": 1}):
        assert agg.ingest(W1, bad, T0) is False
    d = agg.to_dict()
    assert d["counters"]["payload_errors"] == 7
    assert d["counters"]["payloads"] == 0
    assert d["errors"] == {"ingest:not-bytes": 4}
    assert agg.ingest(W1, bytearray(DigestTracker("i").payload({})), T0) is False
    assert agg.to_dict()["counters"]["payloads"] == 1


# ---- snapshots ----------------------------------------------------------------


def busy_aggregator() -> Aggregator:
    agg = Aggregator(started=T0)
    tasks = {
        "a-1": SimpleNamespace(group=SimpleNamespace(span_id="span-a")),
        "b-1": SimpleNamespace(group=SimpleNamespace(span_id="span-b")),
    }
    agg.set_span_lookup(tasks)
    agg.set_span("span-a", None, ("default",))
    agg.set_span("span-b", "span-a", ("child",))
    for w in (W1, W2):
        agg.worker_seen(w, w[-5:], T0)
    lifecycle(agg, "a-1")
    lifecycle(agg, "b-1", worker=W2)
    erred(agg, "c-1")
    for i in range(50):
        t = T0 + 1 + i * 0.5
        agg.sample(W1, t, (float(i),) * 8 + (None,) + (1.0,) * 8 + (t,))
    tracker = DigestTracker("inc-1")
    agg.ingest(W1, tracker.payload(digests(1.25)), T0 + 5)
    agg.add_record(W1, b"\x00record\xff", T0 + 5)
    agg.count_error("sampler:tick")
    return agg


def test_snapshot_decodes_to_to_dict() -> None:
    agg = busy_aggregator()
    data = agg.snapshot(now=T0 + 100)
    assert isinstance(data, bytes)
    decoded = decode_snapshot(data)
    assert decoded["taken_at"] == T0 + 100
    assert decoded["version"] == _native.SNAPSHOT_VERSION == 3
    assert decoded["started"] == T0
    live = agg.to_dict()
    assert live["taken_at"] >= T0 + 100
    decoded.pop("taken_at")
    live.pop("taken_at")
    assert same(decoded, live)
    assert rows(decoded)[(W1, "span-a", "a")]["tasks"] == 1
    assert len(decoded["series"][W1]["t_first"]) == 50
    assert decoded["records"][0]["data"] == b"\x00record\xff"
    assert decoded["counters"]["hook_calls"] == agg.hook_calls


def test_snapshot_filters_spans_and_time() -> None:
    agg = busy_aggregator()
    only_a = decode_snapshot(agg.snapshot(spans=["span-a"]))
    assert {r["span"] for r in only_a["tasks"]} == {"span-a"}
    assert set(only_a["spans"]) == {"span-a"}
    assert {k[2] for k in only_a["digests"]} == {"span-a"}
    both = agg.to_dict(spans=["span-a", "span-b", "never-seen"])
    assert {r["span"] for r in both["tasks"]} == {"span-a", "span-b"}
    nothing = agg.to_dict(spans=["never-seen"])
    assert nothing["tasks"] == []
    assert nothing["digests"] == {}
    assert agg.to_dict(spans=[])["tasks"] == []
    window = agg.to_dict(t_from=T0 + 10, t_to=T0 + 12)
    assert window["series"][W1]["t_first"] == [T0 + 10, T0 + 10.5, T0 + 11, T0 + 11.5, T0 + 12]
    with pytest.raises(TypeError):
        agg.snapshot(spans="span-a")
    with pytest.raises(TypeError):
        agg.snapshot(spans=[1])


def test_json_state_round_trip() -> None:
    agg = busy_aggregator()
    text = agg.to_json()
    assert isinstance(text, str)
    restored = state_from_json(text)
    assert same(state_from_json(text.encode()), restored)
    live = agg.to_dict()
    for d in (restored, live):
        d.pop("taken_at")
    assert same(restored, live)


def test_counters_property() -> None:
    agg = busy_aggregator()
    c = agg.counters
    for name in (
        "events", "dropped_events", "hook_calls", "hook_errors", "hook_ns_per_call",
        "payloads", "payload_bytes", "payload_errors", "records", "records_dropped",
        "rows_refused", "series_bytes", "series_cap_bytes", "series_samples", "series_folds",
        "strings", "intern_overflows", "prefixes_folded", "ring_pushed", "ring_pending",
        "ring_capacity",
    ):  # fmt: skip
        assert name in c, name
    assert c["hook_calls"] == agg.hook_calls == 11
    assert c["series_cap_bytes"] == 64 << 20
    assert c["ring_pushed"] == 11
    assert c["payloads"] == 1


#: Crafted arguments whose Python code frees what the hook is reading. Run under
#: PYTHONMALLOC=debug, where freed memory is overwritten, so a read of it crashes.
CRAFTED = {
    "transition": """
entry = {}

class Sly:
    armed = False

    def __hash__(self):
        return hash("stop")

    def __eq__(self, other):  # runs inside the lookup of "stop"
        if Sly.armed:
            Sly.armed = False
            entry["start"] = 2.0  # frees the int the hook read first
        return False

entry["action"] = "compute"
entry["start"] = int("1000")  # an int no one else holds
entry[Sly()] = 0
entry["stop"] = 1005
Sly.armed = True
agg.transition("k-1", "processing", "memory", stimulus_id="s", worker="tcp://w:1",
               startstops=[entry], nbytes=1)
agg.drain()
print(agg.to_dict()["prefixes"]["k"]["compute_seconds"] == 5.0)
""",
    "sample": """
class Shrinks:
    def __float__(self):
        values.clear()  # frees the list's items and its array
        return 1.0

values = [Shrinks()] + [float(i) for i in range(17)]
agg.sample("tcp://w:1", 1.0, values)
print(agg.to_dict()["series"]["tcp://w:1"]["columns"]["memory"]["mean"] == [1.0])
""",
}


@pytest.mark.parametrize("method", sorted(CRAFTED))
def test_arguments_that_free_what_the_hook_reads_cannot_crash_it(method: str) -> None:
    script = "from roastcoffea._native import Aggregator\nagg = Aggregator(started=0.0)\n"
    done = subprocess.run(
        [sys.executable, "-c", script + CRAFTED[method]],
        env={**os.environ, "PYTHONMALLOC": "debug"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "True"


def test_a_flood_of_prefixes_folds_and_later_spans_still_count() -> None:
    # Keys such as "task_1" or "file_0001.root" are their own prefix. Beyond 3/4 of the
    # string table (2**20 strings) new prefixes fold into one reported row, so the table
    # keeps room for the span ids of later collectors.
    agg = Aggregator(started=T0)
    flood = 1_100_000
    for i in range(flood):
        agg.transition(f"task_{i}", "released", "waiting", stimulus_id="s")
    agg.set_span_lookup({"mine-1": SimpleNamespace(group=SimpleNamespace(span_id="span-new"))})
    finished(agg, "mine-1")
    d = agg.to_dict(spans=["span-new"])
    assert [(r["span"], r["prefix"], r["tasks"]) for r in d["tasks"]] == [
        ("span-new", "(other prefixes)", 1)
    ]
    counters = d["counters"]
    soft = (1 << 20) - (1 << 20) // 4
    prefixes_kept = soft - 2  # "" and "Other" were there first
    assert counters["strings"] == soft + 3  # then the bucket, the worker and the span
    assert counters["prefixes_folded"] == flood - prefixes_kept + 1  # and "mine"
    assert counters["intern_overflows"] == 0
    assert agg.hook_errors == 0
