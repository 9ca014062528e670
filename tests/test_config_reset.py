"""Settings after ``dask.config`` was reset to a snapshot taken before roastcoffea was imported.

distributed's ``gen_cluster`` resets the configuration to the one it saw when
``distributed.utils_test`` was imported, for every test; a user's own tests of that kind,
and the preload on their schedulers, must still read roastcoffea's defaults.
"""

from __future__ import annotations

from collections.abc import Iterator

import dask
import distributed.utils_test
import pytest
from distributed.utils_test import gen_cluster

from roastcoffea import MetricsCollector, RoastPlugin, config
from roastcoffea.plugin.protocol import PLUGIN_NAME

pytestmark = pytest.mark.cluster


@pytest.fixture
def config_without_ours() -> Iterator[None]:
    """The configuration, and gen_cluster's snapshot of it, without roastcoffea's defaults.

    Both dicts are changed in place, as ``reset_config`` does: ``dask.config.get`` reads
    the module's dict object.
    """
    saved = [
        (settings, settings.pop("roastcoffea", None))
        for settings in (dask.config.config, distributed.utils_test.original_config)
    ]
    try:
        yield
    finally:
        for settings, ours in saved:
            if ours is not None:
                settings["roastcoffea"] = ours


def test_every_setting_reads_its_packaged_default(config_without_ours: None) -> None:
    for name, default in config.DEFAULTS["roastcoffea"].items():
        assert config.setting(name) == default
    plugin = RoastPlugin()
    assert (plugin.interval, plugin.phases, plugin.ring_capacity) == (1.0, True, 131072)
    assert config.seconds("flush-timeout") == 10.0


def test_an_unknown_setting_is_named() -> None:
    with pytest.raises(KeyError, match="no-such-setting"):
        config.setting("no-such-setting")


def test_a_setting_made_after_the_reset_still_wins(config_without_ours: None) -> None:
    with dask.config.set({"roastcoffea.interval": "250ms"}):
        assert RoastPlugin().interval == 0.25


@gen_cluster(
    client=True,
    nthreads=[("127.0.0.1", 1)],
    scheduler_kwargs={"preload": ["roastcoffea"]},
)
async def _preloaded_cluster(c, s, a) -> None:  # type: ignore[no-untyped-def]
    assert "roastcoffea" not in dask.config.config  # gen_cluster reset it
    assert PLUGIN_NAME in s.plugins  # the preload did not fail
    assert await c.submit(sum, [1, 2], workers=[a.address]) == 3
    assert PLUGIN_NAME in a.plugins
    MetricsCollector(c)


def test_gen_cluster_with_the_preload_after_a_reset(config_without_ours: None) -> None:
    _preloaded_cluster()
