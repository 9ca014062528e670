"""Settings after ``dask.config`` was reset to a snapshot taken before roastcoffea was imported.

distributed's ``gen_cluster`` resets the configuration to the one it saw when
``distributed.utils_test`` was imported, for every test; a user's own tests of that kind,
and the preload on their schedulers, must still read roastcoffea's defaults.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import dask
import distributed.utils_test
import pytest

from roastcoffea import RoastPlugin, config

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


#: A user's own test module: distributed's test helpers imported before roastcoffea, so
#: gen_cluster's snapshot of the configuration lacks roastcoffea's defaults.
USER_TESTS = """
import dask
from distributed.utils_test import gen_cluster

from roastcoffea import MetricsCollector


@gen_cluster(
    client=True, nthreads=[("127.0.0.1", 1)], scheduler_kwargs={"preload": ["roastcoffea"]}
)
async def test_first(c, s, a):
    assert "roastcoffea" not in dask.config.config  # gen_cluster reset it
    assert "roastcoffea" in s.plugins  # the preload did not fail
    assert await c.submit(sum, [1, 2], workers=[a.address]) == 3
    assert "roastcoffea" in a.plugins
    MetricsCollector(c)


test_second = test_first
"""


def test_a_user_s_gen_cluster_tests_with_the_preload(tmp_path: Path) -> None:
    # In a process of its own: gen_cluster checks that no other cluster or loop runs.
    (tmp_path / "test_user.py").write_text(USER_TESTS, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_user.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "2 passed" in done.stdout
