"""Settings in dask.config under roastcoffea.*: defaults, overrides, arguments win."""

from __future__ import annotations

import dask
import pytest
from distributed import Client

from roastcoffea import MetricsCollector, RoastPlugin, config


def test_defaults_are_dask_settings() -> None:
    assert dask.config.get("roastcoffea.interval") == "1s"
    plugin = RoastPlugin()
    assert plugin.interval == 1.0
    assert plugin.ring_capacity == 131072
    assert plugin.series_cap_bytes == 64 << 20
    assert plugin.live is True
    assert config.seconds("flush-timeout") == 10.0
    assert config.seconds("probe-timeout") == 5.0
    assert plugin.phase_cpu_interval == 0.001
    assert plugin.phases is True


def test_settings_override_defaults_and_arguments_win() -> None:
    overrides = {
        "roastcoffea.interval": "250ms",
        "roastcoffea.ring-capacity": 1024,
        "roastcoffea.series-cap-bytes": "1MiB",
        "roastcoffea.live": False,
        "roastcoffea.phase-cpu-interval": "0ms",
        "roastcoffea.phases": False,
    }
    with dask.config.set(overrides):
        plugin = RoastPlugin()
        assert (plugin.interval, plugin.ring_capacity) == (0.25, 1024)
        assert (plugin.series_cap_bytes, plugin.live) == (1 << 20, False)
        assert (plugin.phase_cpu_interval, plugin.phases) == (0.0, False)
        given = RoastPlugin(
            2.0,
            ring_capacity=64,
            series_cap_bytes=1 << 17,
            live=True,
            phase_cpu_interval=0.01,
            phases=True,
        )
        assert (given.interval, given.ring_capacity) == (2.0, 64)
        assert (given.series_cap_bytes, given.live) == (1 << 17, True)
        assert (given.phase_cpu_interval, given.phases) == (0.01, True)


def test_environment_variables_reach_the_settings() -> None:
    # Dask reads DASK_* variables at import; collect() parses them as it does then.
    from_env = dask.config.collect(paths=[], env={"DASK_ROASTCOFFEA__INTERVAL": "0.5"})
    assert from_env == {"roastcoffea": {"interval": 0.5}}
    with dask.config.set({"roastcoffea.interval": from_env["roastcoffea"]["interval"]}):
        assert RoastPlugin().interval == 0.5
        assert dask.config.get("roastcoffea.flush-timeout") == "10s"  # defaults kept


def test_bad_settings_are_refused_like_bad_arguments() -> None:
    with dask.config.set({"roastcoffea.interval": "2h"}), pytest.raises(ValueError, match="3600"):
        RoastPlugin()
    with dask.config.set({"roastcoffea.ring-capacity": "many"}), pytest.raises(TypeError):
        RoastPlugin()
    for bad in (-0.001, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="phase_cpu_interval"):
            RoastPlugin(phase_cpu_interval=bad)
    with pytest.raises(TypeError, match="phase_cpu_interval"):
        RoastPlugin(phase_cpu_interval="1ms")
    with dask.config.set({"roastcoffea.phases": "no"}), pytest.raises(TypeError, match="phases"):
        RoastPlugin()


def test_collector_reads_its_interval_from_the_settings(client: Client) -> None:
    with dask.config.set({"roastcoffea.interval": 0.5}):
        assert MetricsCollector(client).worker_tracking_interval == 0.5
        assert MetricsCollector(client, worker_tracking_interval=2).worker_tracking_interval == 2
