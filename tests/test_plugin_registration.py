"""Registering, pickling and stopping the plugin pair on real clusters."""

from __future__ import annotations

import operator
import pickle
from typing import Any

import distributed
import pytest
from distributed import Client
from roast_testing import keys, wait_for

from roastcoffea import RoastPlugin
from roastcoffea.plugin import snapshot, stop
from roastcoffea.plugin.worker.plugin import auto_window


def roast_scheduler_plugins(client: Client) -> list[tuple[str, int]]:
    """(name, id) of every RoastPlugin instance on the scheduler."""

    def read(dask_scheduler: Any) -> list[tuple[str, int]]:
        return [
            (name, id(plugin))
            for name, plugin in dask_scheduler.plugins.items()
            if type(plugin).__name__ == "RoastPlugin"
        ]

    return client.run_on_scheduler(read)


def worker_plugin_parts(client: Client) -> dict[str, tuple[bool, bool, bool]]:
    """Per worker: whether the worker plugin, its heartbeat metric and its handler exist."""

    def read(dask_worker: Any) -> tuple[bool, bool, bool]:
        return (
            "roastcoffea" in dask_worker.plugins,
            "roastcoffea" in dask_worker.metrics,
            "roastcoffea_worker_state" in dask_worker.handlers,
        )

    return {address: tuple(parts) for address, parts in client.run(read).items()}


def worker_plugin_status(client: Client) -> dict[str, bool]:
    """Per worker: the worker plugin is fully installed."""
    return {address: all(parts) for address, parts in worker_plugin_parts(client).items()}


def scheduler_handlers(client: Client) -> list[str]:
    def read(dask_scheduler: Any) -> list[str]:
        return sorted(h for h in dask_scheduler.handlers if h.startswith("roastcoffea"))

    return client.run_on_scheduler(read)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"interval": 0}, ValueError, "interval"),
        ({"interval": float("nan")}, ValueError, "interval"),
        (
            {"interval": 1e300},
            ValueError,
            r"interval must be a number of seconds in \[0.01, 3600.0\]",
        ),
        ({"interval": "1s"}, TypeError, "interval"),
        ({"window": 0}, ValueError, "window"),
        ({"window": 2.5}, TypeError, "window"),
        ({"ring_capacity": 0}, ValueError, "ring_capacity"),
        ({"series_cap_bytes": 1024}, ValueError, "series_cap_bytes"),
        ({"live": "yes"}, TypeError, "live"),
    ],
)
def test_bad_arguments_are_refused(kwargs: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        RoastPlugin(**kwargs)


def test_pickle_keeps_the_configuration_only() -> None:
    plugin = RoastPlugin(0.5, window=7, ring_capacity=1024, series_cap_bytes=1 << 20, live=False)
    copy = pickle.loads(pickle.dumps(plugin))
    assert copy.__getstate__() == plugin.__getstate__()
    assert copy.aggregator is None
    assert "transition" not in vars(copy)


def test_registering_twice_installs_one_plugin_everywhere(make_cluster: Any) -> None:
    cluster, client = make_cluster()
    client.register_plugin(RoastPlugin())
    first = roast_scheduler_plugins(client)
    client.register_plugin(RoastPlugin(interval=0.5))
    assert roast_scheduler_plugins(client) == first
    assert [name for name, _ in first] == ["roastcoffea"]
    assert scheduler_handlers(client) == [
        "roastcoffea_finish",
        "roastcoffea_flush",
        "roastcoffea_open",
        "roastcoffea_records",
        "roastcoffea_snapshot",
        "roastcoffea_stop",
    ]
    status = worker_plugin_status(client)
    assert len(status) == 2
    assert all(status.values())

    cluster.scale(3)
    client.wait_for_workers(3)
    # The new worker installs the plugin right after registering; give it a moment.
    status = wait_for(
        lambda: worker_plugin_status(client),
        lambda s: len(s) == 3 and all(s.values()),
        timeout=15,
    )
    assert len(status) == 3
    assert all(status.values())
    snap = snapshot(client)
    assert set(status) <= set(snap["workers"])

    cluster.scale(2)
    wait_for(lambda: len(client.scheduler_info()["workers"]), lambda n: n == 2, timeout=15)
    snap = snapshot(client)
    removed = {a for a, w in snap["workers"].items() if w["removed"] is not None}
    assert len(removed) == 1
    assert removed.isdisjoint(client.scheduler_info()["workers"])
    assert snap["workers"][removed.pop()]["payloads"] >= 1
    assert snap["errors"] == {}


def test_stop_removes_everything_and_registering_again_works(roast: Client) -> None:
    client = roast
    result = stop(client)
    assert result == {"workers": 2, "errors": {}}
    assert scheduler_handlers(client) == []
    assert roast_scheduler_plugins(client) == []
    assert set(worker_plugin_parts(client).values()) == {(False, False, False)}
    with pytest.raises(RuntimeError, match="register_plugin"):
        snapshot(client)
    assert client.submit(operator.add, 1, 2, pure=False).result() == 3

    client.register_plugin(RoastPlugin())
    assert all(worker_plugin_status(client).values())
    with distributed.span("after-stop") as span_id:
        assert client.submit(operator.add, 2, 3, key=keys("after-stop", 1)[0]).result() == 5
    snap = snapshot(client, span_id=span_id)
    assert snap["prefixes"]["after-stop"]["tasks"] == 1


@pytest.mark.parametrize(
    ("interval", "heartbeat_ms", "window"),
    [(1.0, 500, 4), (0.2, 500, 3), (1.0, 1000, 3), (10.0, 500, 22), (1.0, 0, 4)],
)
def test_auto_window_covers_the_heartbeats_between_two_ticks(
    interval: float, heartbeat_ms: float, window: int
) -> None:
    assert auto_window(interval, heartbeat_ms) == window
