"""MetricsCollector without coffea: arguments, lifecycle, concurrency, live view, measurements.

The cluster tests use plain Dask tasks with task prefixes no other test uses
(``roast_testing.keys``); the measurement tests need no cluster.
"""

from __future__ import annotations

import gc
import json
import logging
import math
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import cloudpickle
import pytest
from distributed import Client, get_worker
from roast_testing import (
    SUMMARY_TABLES,
    dask_span_metrics,
    keys,
    mismatches,
    run_in_threads,
    wait_for,
)

from roastcoffea import MetricsCollector, _native, load_measurement, save_measurement
from roastcoffea.demo.tasks import nap
from roastcoffea.measurement import load_metadata, load_native
from roastcoffea.plugin import LiveFeed, stop
from roastcoffea.plugin.dask_versions import topic_subscribers
from roastcoffea.plugin.protocol import LIVE_TOPIC as TOPIC
from roastcoffea.records import encode_record
from roastcoffea.report.live import LiveView
from roastcoffea.report.notebook import MetricsDict
from roastcoffea.report.summary import print_summary

# Workers do not import this test module: ship its task functions by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

REPORT = {"entries": 1000, "bytesread": 4_000_000, "processtime": 2.0, "chunks": 10}


def run_naps(client: Client, prefix: str, n: int = 6, seconds: float = 0.02) -> None:
    client.gather(client.map(nap, [seconds] * n, key=keys(prefix, n), pure=False))


def queue_chunk(events: int) -> bool:
    """On a worker: queue a chunk record through the roastcoffea worker plugin."""
    plugin = get_worker().plugins["roastcoffea"]
    record = {"kind": "chunk", "v": 1, "span": None, "num_events": events, "bytes_read": 1000}
    return plugin.queue_record(encode_record(record))


def tick(dask_scheduler: Any) -> None:
    dask_scheduler.plugins["roastcoffea"].tick()


def live_subscribers(dask_scheduler: Any) -> int | None:
    return topic_subscribers(dask_scheduler, TOPIC)


def plugin_interval(dask_scheduler: Any) -> float | None:
    plugin = dask_scheduler.plugins.get("roastcoffea")
    return None if plugin is None else plugin.interval


# ---- arguments -----------------------------------------------------------------------


def test_client_none_is_refused() -> None:
    with pytest.raises(ValueError, match="client=None"):
        MetricsCollector(None)


def test_client_of_another_type_is_refused() -> None:
    with pytest.raises(TypeError, match=r"distributed\.Client, got client of type object"):
        MetricsCollector(object())


def test_unknown_backend_is_refused(client: Client) -> None:
    with pytest.raises(ValueError, match=r"^Unsupported backend: invalid$"):
        MetricsCollector(client, backend="invalid")


@pytest.mark.parametrize("interval", [0, -1.0, 0.001, 3600.5, 1e300, math.nan, math.inf, "1", True])
def test_bad_interval_is_refused(client: Client, interval: Any) -> None:
    with pytest.raises(ValueError, match="worker_tracking_interval"):
        MetricsCollector(client, worker_tracking_interval=interval)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"track_workers": "yes"}, "track_workers"),
        ({"live": 1}, "live"),
        ({"processor_prefixes": [1]}, "processor_prefixes"),
        ({"name": b"run"}, "name must be a str"),
    ],
)
def test_bad_options_are_refused(client: Client, kwargs: dict, match: str) -> None:
    with pytest.raises(TypeError, match=match):
        MetricsCollector(client, **kwargs)


@pytest.mark.parametrize("name", ["", "  ", "x" * 201])
def test_a_blank_or_overlong_name_is_refused(client: Client, name: str) -> None:
    with pytest.raises(ValueError, match="name must be 1 to 200 characters"):
        MetricsCollector(client, name=name)


def test_results_before_exit_are_refused(client: Client) -> None:
    mc = MetricsCollector(client)
    with pytest.raises(RuntimeError, match="Timing not available - use within context manager"):
        mc.get_metrics()
    with mc:
        with pytest.raises(RuntimeError, match="Timing not available"):
            mc.get_metrics()
        with pytest.raises(RuntimeError, match="Cannot save measurement before context manager"):
            mc.save_measurement("unused")
        with pytest.raises(RuntimeError, match="already running"):
            mc.__enter__()
    with pytest.raises(RuntimeError, match=r"Coffea report not set - call set_coffea_report\(\)"):
        mc.get_metrics()
    assert mc.metrics is None
    with pytest.raises(TypeError, match="report must be a dict"):
        mc.set_coffea_report([1])


# ---- lifecycle -----------------------------------------------------------------------


def held_double(x: int) -> int:
    return 2 * x


def test_collector_sees_its_block(client: Client) -> None:
    run_naps(client, "before-block")
    with MetricsCollector(client) as mc:
        run_naps(client, "in-block")
    run_naps(client, "after-block")
    assert mc.collector_errors == []
    assert gc.isenabled()  # paused for the exit's decoding only
    assert mc.live_view is None  # stdout is not a terminal under pytest
    assert {k[1] for k in mc.span_metrics} == {"in-block"}
    assert mc.t_start < mc.t_end and 0 < mc.wall_time <= mc.t_end - mc.t_start + 0.01
    assert mc.span_info == {"name": "coffea-processing", "id": mc.span_id}
    assert mc.tracking_data["worker_counts"]
    assert mc.metrics is None  # no report yet
    mc.set_coffea_report(REPORT)  # after exit: no ordering trap
    m = mc.get_metrics()
    assert m["per_prefix"]["in-block"]["tasks"] == 6
    assert m["total_events"] == 1000
    assert m["lost_workers"] == []
    assert m["monitoring"]["collector_errors"] == []
    assert m["monitoring"]["flush_seconds"] > 0
    assert mc.get_metrics() is m  # cached while nothing changes


def test_user_exception_propagates_and_metrics_still_come(client: Client) -> None:
    with pytest.raises(ZeroDivisionError), MetricsCollector(client) as mc:
        run_naps(client, "before-error")
        _ = 1 / 0
    assert mc.collector_errors == []
    mc.set_coffea_report(REPORT)
    assert mc.get_metrics()["per_prefix"]["before-error"]["tasks"] == 6


def test_sequential_collectors_are_disjoint(client: Client) -> None:
    with MetricsCollector(client) as first:
        run_naps(client, "seq-first")
    with MetricsCollector(client) as second:
        run_naps(client, "seq-second", n=4)
    assert {k[1] for k in first.span_metrics} == {"seq-first"}
    assert {k[1] for k in second.span_metrics} == {"seq-second"}
    assert second.snapshot["span_tasks"] and all(
        span in second.run.span_ids for span in second.snapshot["span_tasks"]
    )


def test_a_second_collector_sees_its_tasks_while_the_firsts_are_held(client: Client) -> None:
    # Both blocks map the same function: one task group. Dask attaches a group to the
    # span of its first tasks; those are still held when the second block submits.
    with MetricsCollector(client) as first:
        kept = client.map(held_double, range(10), pure=False)
        client.gather(kept)
    with MetricsCollector(client) as second:
        client.gather(client.map(held_double, range(10, 17), pure=False))
    for mc, n in ((first, 10), (second, 7)):
        rows = [r for r in mc.snapshot["tasks"] if r["span"] in mc.run.span_ids]
        assert sum(r["tasks"] for r in rows if r["prefix"] == "held_double") == n
        assert {k[1] for k in mc.span_metrics} == {"held_double"}
    assert client.gather(kept) == [2 * i for i in range(10)]


def test_concurrent_collectors_from_two_threads(client: Client) -> None:
    both_inside = threading.Barrier(2, timeout=30)
    seen: dict[str, MetricsCollector] = {}
    failures: list[BaseException] = []

    def work(prefix: str) -> None:
        try:
            with MetricsCollector(client) as mc:
                both_inside.wait()
                run_naps(client, prefix, n=8, seconds=0.05)
                both_inside.wait()
            seen[prefix] = mc
        except BaseException as exc:
            failures.append(exc)

    run_in_threads(work, ("conc-left", "conc-right"))
    assert failures == []
    left, right = seen["conc-left"], seen["conc-right"]
    assert left.span_id != right.span_id
    assert left.t_start < right.t_end and right.t_start < left.t_end  # the blocks overlapped
    for prefix, mc in seen.items():
        assert {k[1] for k in mc.span_metrics} == {prefix}
        mc.set_coffea_report(REPORT)
        assert set(mc.get_metrics()["per_prefix"]) == {prefix}
        assert mc.get_metrics()["per_prefix"][prefix]["tasks"] == 8


def shared_group_nap(seconds: float) -> float:
    """A task function both threads below map: one task group for both runs."""
    time.sleep(seconds)
    return seconds


def test_concurrent_collectors_sharing_a_task_group_count_their_own(client: Client) -> None:
    """Dask files every task of a group under the span of its first task; the run
    annotation puts each collector's tasks back in its own span, Dask's totals too."""
    both_inside = threading.Barrier(2, timeout=30)
    seen: dict[int, MetricsCollector] = {}
    failures: list[BaseException] = []

    def work(n: int) -> None:
        try:
            with MetricsCollector(client, live=False) as mc:
                both_inside.wait()
                client.gather(client.map(shared_group_nap, [0.02] * n, pure=False))
                both_inside.wait()
            seen[n] = mc
        except BaseException as exc:
            failures.append(exc)

    run_in_threads(work, (5, 9))
    assert failures == []
    for n, mc in seen.items():
        mc.set_coffea_report(REPORT)
        assert mc.get_metrics()["per_prefix"]["shared_group_nap"]["tasks"] == n
        assert mc.get_metrics()["per_prefix"]["shared_group_nap"]["compute_seconds"] >= n * 0.02
        # Dask's own span totals of the run, which arrive with the workers' heartbeats
        ours = {k: v for k, v in mc.span_metrics.items() if k[1] == "shared_group_nap"}
        theirs = wait_for(
            lambda mc=mc: dask_span_metrics(client, mc.span_id),
            lambda t, ours=ours: not mismatches(ours, t),
            timeout=20,
        )
        assert ours and mismatches(ours, theirs) == {}


def test_extract_metrics_from_output_merges_old_records(client: Client, caplog: Any) -> None:
    with MetricsCollector(client) as mc:
        run_naps(client, "extract")
    mc.set_coffea_report(REPORT)
    assert mc.get_metrics()["num_chunks"] == 10  # the report's count: no chunk record yet
    old = {"dataset": "d", "file": "f.root", "entry_start": 0, "entry_stop": 10, "t_start": 1.0}
    old.update(num_events=10, duration=0.5, t_end=1.5, bytes_read=100)
    output = {"sum": 3, "__roastcoffea_metrics__": [old, dict(old)]}
    mc.extract_metrics_from_output(output)
    assert output == {"sum": 3}
    assert mc.chunk_metrics == [old]
    assert mc.get_metrics()["num_chunks"] == 1  # recomputed after the change
    mc.extract_metrics_from_output({"sum": 3})
    mc.extract_metrics_from_output(1000)
    with caplog.at_level(logging.WARNING, logger="roastcoffea.collector"):
        mc.extract_metrics_from_output({"__roastcoffea_metrics__": "nope"})
    assert "Metrics not a list" in caplog.text
    assert mc.chunk_metrics == [old]


def test_registers_plugin_and_reports_its_own_failures(make_cluster: Any, caplog: Any) -> None:
    _, client = make_cluster()
    assert client.run_on_scheduler(plugin_interval) is None
    with (
        caplog.at_level(logging.WARNING, logger="roastcoffea.collector"),
        MetricsCollector(client, worker_tracking_interval=0.25) as mc,
    ):
        assert client.run_on_scheduler(plugin_interval) == 0.25
        run_naps(client, "stopped")
        stop(client)  # the plugin disappears under the collector
    assert mc.run.plugin_interval == 0.25
    assert mc.snapshot is None
    assert any("no running RoastPlugin" in e for e in mc.collector_errors)
    assert "no running RoastPlugin" in caplog.text
    mc.set_coffea_report(REPORT)
    m = mc.get_metrics()
    assert m["total_events"] == 1000
    assert m["monitoring"]["collector_errors"] == mc.collector_errors
    assert "snapshot" in m["unavailable"]

    # A collector asking for another interval keeps the registered plugin's.
    with MetricsCollector(client, worker_tracking_interval=0.5) as first:
        pass
    with MetricsCollector(client, worker_tracking_interval=2.0) as second:
        pass
    assert first.run.plugin_interval == second.run.plugin_interval == 0.5
    assert any("already registered with interval 0.5" in n for n in second.notes)


def test_without_worker_tracking(client: Client) -> None:
    with MetricsCollector(client, track_workers=False) as mc:
        run_naps(client, "untracked")
    mc.set_coffea_report(REPORT)
    m = mc.get_metrics()
    assert mc.tracking_data is None
    assert m["avg_workers"] is None and "track_workers=False" in m["unavailable"]["avg_workers"]


def test_print_summary(client: Client, capsys: Any) -> None:
    with MetricsCollector(client) as mc:
        run_naps(client, "summary")
    mc.set_coffea_report(REPORT)
    mc.print_summary()
    out = capsys.readouterr().out
    for title in (*SUMMARY_TABLES, "Total Chunks"):
        assert title in out, title
    assert "N/A (no chunk record" in out


def test_summary_of_an_empty_dictionary(capsys: Any) -> None:
    print_summary({"unavailable": {"wall_time": "because"}, "wall_time": None})
    out = capsys.readouterr().out
    assert "N/A (because)" in out and "N/A (not computed)" in out


# ---- the live view -------------------------------------------------------------------


def test_the_rich_view_says_why_metrics_are_missing(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    mc = MetricsCollector(client)
    assert "not started" in mc._repr_html_()
    with mc:
        assert "running" in mc._repr_html_()
    assert "waiting for set_coffea_report()" in mc._repr_html_()

    def broken(inputs: Any) -> dict[str, Any]:
        raise KeyError("entries")

    monkeypatch.setattr("roastcoffea.collector.compute_metrics", broken)
    mc.set_coffea_report(REPORT)
    shown = mc._repr_html_()
    assert "the metrics could not be computed" in shown and "KeyError" in shown
    assert "waiting" not in shown


def test_notebooks_are_recognised_by_capability(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any IPython shell with a kernel attached (Colab's, VS Code's) updates displays."""
    import types

    from roastcoffea.report.live_notebook import in_notebook

    class ColabShell:  # not named ZMQInteractiveShell
        kernel = object()

    class TerminalShell:
        kernel = None

    for shell, expected in ((ColabShell(), True), (TerminalShell(), False), (None, False)):
        fake = types.ModuleType("IPython")
        fake.get_ipython = lambda shell=shell: shell  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "IPython", fake)
        assert in_notebook() is expected


def test_a_stopped_view_shows_the_whole_blocks_figures() -> None:
    view = LiveView(feed=None)
    delta = {"interval": 1.0, "tasks": 2, "chunks": 1, "chunk_events": 100, "chunk_bytes": 10}
    view.receive((0.0, {**delta, "workers": {"a": {"memory": 100.0}}}))
    final = {**view.state(), "events": 5000, "tasks": 9, "event_rate_hz": 2500.0, "elapsed": 2.0}
    view.stop({**final, "memory_bytes": None})
    state = view.state()
    assert (state["events"], state["tasks"], state["elapsed"]) == (5000, 9, 2.0)
    assert state["memory_bytes"] == 100.0  # the flush has none: the last reading stays
    assert view.settled


def test_live_view_rates_from_deltas() -> None:
    view = LiveView(feed=None)
    worker = {"memory": 100.0, "cpu": 5.0}
    for events in (100, 300):
        delta = {"interval": 1.0, "tasks": 2, "erred": 0, "chunks": 1, "chunk_events": events}
        delta.update(chunk_bytes=10**9, transition_rate_hz=50.0, workers={"a": worker, "b": worker})
        view.receive((0.0, delta))
    view.receive("not an event")
    state = view.state()
    assert state["event_rate_hz"] == 200.0
    assert state["gbps"] == 8.0
    assert state["workers"] == 2 and state["memory_bytes"] == 200.0
    assert (state["tasks"], state["chunks"], state["events"]) == (4, 2, 400)
    assert view.deltas == 2
    assert view.render().title == "roastcoffea"


def test_live_view_names_the_dominant_phase_so_far() -> None:
    view = LiveView(feed=None)
    assert view.state()["dominant_phase"] is None
    for phases in ({"open": 1.0, "user": 0.5}, {"user": 2.0, "decompress": 0.5}):
        view.receive((0.0, {"interval": 1.0, "phases": phases}))
    assert view.state()["dominant_phase"] == ("user", 62.5)


def test_live_view_follows_the_stream(roast: Client) -> None:
    client = roast
    view = LiveView(LiveFeed(client))
    assert view.start(), view.off_reason
    try:
        # Subscribing is a message to the scheduler: the stream starts once it arrived.
        subscribed = wait_for(
            lambda: client.run_on_scheduler(live_subscribers), lambda n: n >= 1, timeout=15
        )
        assert subscribed >= 1
        client.run_on_scheduler(tick)  # the baseline of the stream
        run_naps(client, "live-view", n=10)
        client.gather(client.map(queue_chunk, [7, 5], pure=False))
        state = wait_for(
            lambda: (client.run_on_scheduler(tick), view.state())[1],
            lambda s: s["tasks"] >= 12 and s["events"] == 12,
            timeout=15,
        )
        assert state["chunks"] == 2 and state["events"] == 12 and state["bytes"] == 2000
        assert state["workers"] == 2 and state["memory_bytes"] > 0
        second = LiveView(LiveFeed(client))
        assert not second.start() and "another collector" in second.off_reason
    finally:
        view.stop()
    third = LiveView(LiveFeed(client))  # the client is free again
    assert third.start(), third.off_reason
    third.stop()


def test_live_view_leaves_the_users_own_handler_alone(roast: Client) -> None:
    client = roast
    mine = client._event_handlers.get(TOPIC)
    assert mine is None  # our views remove their own handler when they stop
    client.subscribe_topic(TOPIC, lambda event: None)
    view = LiveView(LiveFeed(client))
    try:
        assert not view.start() and "already has a handler" in view.off_reason
    finally:
        client.unsubscribe_topic(TOPIC)
        # distributed keeps the handler after unsubscribing: only its owner can drop it.
        del client._event_handlers[TOPIC]
    assert view.start(), view.off_reason
    view.stop()
    assert TOPIC not in client._event_handlers


# ---- measurements --------------------------------------------------------------------


def sample_metrics() -> dict[str, Any]:
    t = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc)
    return {
        "wall_time": 12.5,
        "total_events": 2**40,
        "big": 2**70,
        "raw_span_metrics": {("execute", "MyProc", "thread-cpu", "seconds"): 1.25},
        "per_worker_fine_metrics": {"tcp://a:1": {("execute", "reduce", "other", "s"): 0.5}},
        "chunk_info": {("f.root", 0, 100): (1.0, 2.0, None)},
        "tracking_data": {
            "worker_counts": {t: 2, t + timedelta(seconds=1): 3},
            "worker_memory": {"tcp://a:1": [(t, 1.5e9), (t + timedelta(seconds=1), math.nan)]},
        },
        "raw_chunk_metrics": [
            {"dataset": "d", "accessed_branches": ["Muon_pt"], "error": None, "timing": {}}
        ],
        "nan": math.nan,
        "-nan": -math.nan,
        "inf": math.inf,
        "-inf": -math.inf,
        "-zero": -0.0,
        "blob": b"\x00\xff",
        "set": {1, "a"},
        "$dollar": {"$tuple": [1]},
        "empty": ({}, [], ()),
        "naive": datetime(2026, 1, 1),
        "unavailable": {"total_cores": "no worker sample"},
    }


def same(a: Any, b: Any) -> bool:
    """Equal with NaN == NaN (its sign too), and exact types."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if math.isnan(a):
            return math.isnan(b) and math.copysign(1, a) == math.copysign(1, b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def test_measurement_round_trip(tmp_path: Path) -> None:
    metrics = sample_metrics()
    path = save_measurement(metrics, 100.25, 112.75, tmp_path, "m1", config={"k": (1, 2)})
    assert path == tmp_path / "m1"
    loaded, t0, t1 = load_measurement(path)
    assert (t0, t1) == (100.25, 112.75)
    assert type(loaded) is MetricsDict  # a dict that notebooks show as a summary
    assert same(dict(loaded), metrics)
    assert (path / "start_end_time.txt").read_text() == "100.25,112.75\n"
    meta = load_metadata(path)
    assert meta["schema_version"] == 1
    assert meta["start_utc"] == "1970-01-01T00:01:40.250000+00:00"
    assert {"python", "dask", "distributed", "coffea", "roastcoffea"} <= set(meta["versions"])
    assert json.loads((path / "config.json").read_text()) == {"k": {"$tuple": [1, 2]}}
    assert load_native(path) is None


def test_measurement_default_name_is_utc_time(tmp_path: Path) -> None:
    path = save_measurement({}, 1.0, 2.0, tmp_path)
    assert path.parent == tmp_path and path.name.endswith("Z")
    assert load_measurement(path) == ({}, 1.0, 2.0)


def test_measurement_native_file(tmp_path: Path) -> None:
    aggregator = _native.Aggregator(started=1.0)
    aggregator.worker_seen("tcp://a:1", "w0", 2.0)
    aggregator.add_record("tcp://a:1", b"record", 2.0, "span")
    data, text = _native.decode_exit_snapshot(aggregator.snapshot())
    assert data["records"] and "tcp://a:1" in data["workers"]
    state = save_measurement({}, 1.0, 2.0, tmp_path, "state", native_state=text)
    assert (state / "native_state.json").is_file()
    restored = load_native(state)
    assert "tcp://a:1" in restored["workers"]
    assert restored["records"] == []  # kept once, decoded, in metrics.json
    with pytest.raises(TypeError, match="state file's text"):
        save_measurement({}, 1.0, 2.0, tmp_path, "bytes", native_state=b"\x80")  # type: ignore[arg-type]
    (state / "native_state.json").write_text("{garbage")
    with pytest.raises(ValueError, match=r"native_state\.json"):
        load_native(state)
    (state / "native_state.json").unlink()
    with pytest.raises(FileNotFoundError, match=r"native_state\.json"):
        load_native(state)


def test_measurement_refuses_to_overwrite(tmp_path: Path) -> None:
    first = save_measurement({"a": 1}, 1.0, 2.0, tmp_path, "m", native_state="{}")
    with pytest.raises(FileExistsError, match=str(first)):
        save_measurement({"a": 2}, 1.0, 2.0, tmp_path, "m")
    assert load_measurement(first)[0] == {"a": 1}
    save_measurement({"a": 2}, 3.0, 4.0, tmp_path, "m", overwrite=True)
    assert load_measurement(first) == ({"a": 2}, 3.0, 4.0)
    assert not (first / "native_state.json").exists()  # stale files go too


def test_measurement_refuses_bad_input(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"metrics\['x'\]\[0\]: cannot save a value of type object"):
        save_measurement({"x": [object()]}, 1.0, 2.0, tmp_path, "bad")
    assert not (tmp_path / "bad").exists()
    for name in ("a/b", "..", ""):
        with pytest.raises(ValueError, match="measurement_name"):
            save_measurement({}, 1.0, 2.0, tmp_path, name)
    with pytest.raises(ValueError, match="t1"):
        save_measurement({}, 2.0, 1.0, tmp_path, "times")
    with pytest.raises(ValueError, match="t0"):
        save_measurement({}, math.nan, 1.0, tmp_path, "times")
    with pytest.raises(ValueError, match="may not replace"):
        save_measurement({}, 1.0, 2.0, tmp_path, "meta", metadata={"t0": 5})
    with pytest.raises(ValueError, match=r"t0 is 1e\+300 epoch seconds, not a date"):
        save_measurement({}, 1e300, 1e301, tmp_path, "far")
    looped: dict[str, Any] = {"a": [1]}
    looped["a"].append(looped)
    with pytest.raises(ValueError, match=r"metrics\['a'\]\[1\]: the value contains itself"):
        save_measurement(looped, 1.0, 2.0, tmp_path, "looped")
    deep: Any = 0
    for _ in range(200):
        deep = [deep]
    with pytest.raises(ValueError, match="nested deeper than 100 levels"):
        save_measurement({"deep": deep}, 1.0, 2.0, tmp_path, "deep")
    assert not any((tmp_path / name).exists() for name in ("far", "looped", "deep"))


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    return save_measurement(sample_metrics(), 1.0, 2.0, tmp_path, "m")


def test_load_missing_directory_and_files(saved: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nowhere"):
        load_measurement(saved.parent / "nowhere")
    for name in ("metrics.json", "start_end_time.txt", "metadata.json"):
        moved = saved / name
        moved.rename(saved / "aside")
        with pytest.raises(FileNotFoundError, match=name):
            load_measurement(saved)
        (saved / "aside").rename(moved)
    assert load_measurement(saved)[1:] == (1.0, 2.0)


@pytest.mark.parametrize(
    ("name", "content", "match"),
    [
        ("metrics.json", None, r"metrics\.json: truncated or not JSON"),
        ("metrics.json", '{"format": "other", "version": 1}', "not a roastcoffea file"),
        ("metrics.json", '{"format": "roastcoffea-metrics", "version": 9}', "newer roastcoffea"),
        ("metrics.json", '{"format": "roastcoffea-metrics", "version": 1}', "'metrics' missing"),
        (
            "metrics.json",
            '{"format": "roastcoffea-metrics", "version": -5}',
            "version missing or not a positive integer",
        ),
        (
            "metrics.json",
            '{"format": "roastcoffea-metrics", "version": 1, '
            '"metrics": {"d": {"$timedelta": [1e20, 0, 0]}}}',
            r"metrics\.json: metrics\['d'\]: a \$timedelta tag holding no valid value",
        ),
        (
            "metrics.json",
            '{"format": "roastcoffea-metrics", "version": 1, "metrics": {"t": '
            + '{"$tuple": [' * 150
            + "1"
            + "]}" * 150
            + "}}",
            r"metrics\.json: metrics\['t'\].*: nested deeper than 100 levels",
        ),
        ("metrics.json", "[" * 100_000 + "]" * 100_000, "metrics.json: JSON nested too deeply"),
        (
            "metrics.json",
            '{"format": "roastcoffea-metrics", "version": 1, "metrics": {"a": {"$nope": 1}}}',
            r"metrics\.json: metrics\['a'\]: unknown or malformed \$-tag",
        ),
        ("metadata.json", "[1, 2]", r"metadata\.json: not a roastcoffea file"),
        ("metadata.json", None, r"metadata\.json: truncated"),
        ("start_end_time.txt", "1.0;2.0", "invalid timing format"),
        ("start_end_time.txt", "1.0,3.0", "disagree"),
    ],
)
def test_load_refuses_damaged_files(
    saved: Path, name: str, content: str | None, match: str
) -> None:
    path = saved / name
    if content is None:  # truncated
        text = path.read_text()
        content = text[: len(text) // 2]
    path.write_text(content)
    with pytest.raises(ValueError, match=match):
        load_measurement(saved)


def test_load_a_roastcoffea_012_measurement(tmp_path: Path) -> None:
    old = tmp_path / "old"
    old.mkdir()
    metrics = {"elapsed_time_seconds": 3.0, "raw_span_metrics": {"('execute', 'P', 'a', 'u')": 1}}
    record = {"mem_before_mb": 100.0, "mem_after_mb": 101.5, "mem_delta_mb": 1.5}
    (old / "metrics.json").write_text(json.dumps({**metrics, "raw_chunk_metrics": [record]}))
    (old / "start_end_time.txt").write_text("10.5,13.5\n")
    (old / "metadata.json").write_text(json.dumps({"format": "roastcoffea_measurement_v1"}))
    loaded, t0, t1 = load_measurement(old)
    assert (t0, t1) == (10.5, 13.5)
    # 0.1.2's str() of a tuple key is a tuple again; its elapsed time is our wall_time,
    # and its name still reads it.
    # Its chunk records' MiB fields take our names.
    assert loaded == {
        "raw_span_metrics": {("execute", "P", "a", "u"): 1},
        "raw_chunk_metrics": [
            {"mem_before_mib": 100.0, "mem_after_mib": 101.5, "mem_delta_mib": 1.5}
        ],
        "wall_time": 3.0,
        "unavailable": {},
    }
    assert loaded["elapsed_time_seconds"] == 3.0


def test_exit_after_the_client_closed_says_so(make_cluster: Any) -> None:
    _, own = make_cluster(n_workers=1)
    with MetricsCollector(own, live=False) as mc:
        own.submit(sum, [1, 2]).result()
        own.close()
    assert any("the client is closed" in e for e in mc.collector_errors), mc.collector_errors
    assert not any("AttributeError" in e for e in mc.collector_errors)


def test_exit_with_the_scheduler_gone_is_bounded_and_says_why(make_cluster: Any) -> None:
    cluster, own = make_cluster(n_workers=1)
    with MetricsCollector(own, live=False) as mc:
        own.submit(sum, [1, 2]).result()
        own.sync(cluster.scheduler.close)  # the scheduler goes away under the client
    # Dask would hold each call for its 30 s connect timeout; the exit gives up after
    # the probe (measured on the collector's own clock).
    assert mc.exit_seconds < 20
    assert any("is it gone?" in e or "not connected" in e for e in mc.collector_errors)
    own.close(timeout=2)  # not Dask's 30 s of reconnecting
