"""Shared fixtures: real local Dask clusters (no mocks of Dask anywhere)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from distributed import Client, LocalCluster
from measured_run import Measured, measure

from roastcoffea import RoastPlugin, load_measurement

#: Fixtures that start a Dask cluster: every test that uses one, directly or not, is
#: marked ``cluster`` (``make test-fast`` leaves those out).
CLUSTER_FIXTURES = frozenset({"cluster", "make_cluster"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if CLUSTER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.cluster)


def local_cluster(**kwargs: Any) -> LocalCluster:
    """Two single-threaded worker processes; the HTTP server on a free port."""
    options = {
        "n_workers": 2,
        "threads_per_worker": 1,
        "processes": True,
        "dashboard_address": "127.0.0.1:0",
    }
    options.update(kwargs)
    return LocalCluster(**options)


#: The small real CMS NanoAOD files the data tests read (tests/data/README.md says where from).
CMS_FILES = ("nano_dy.root", "nano_dimuon.root", "nanoAOD_2015_CMS_Open_Data_ttbar.root")


@pytest.fixture(scope="session")
def cms_data() -> Path:
    """The directory of the CMS NanoAOD test files, ``tests/data``.

    Fails, never skips, when a file is missing: the data tests are part of the suite.
    """
    path = Path(__file__).resolve().parent / "data"
    missing = [name for name in CMS_FILES if not (path / name).is_file()]
    if missing:
        pytest.fail(f"test data missing in {path}: {', '.join(missing)}")
    return path


@pytest.fixture(scope="session")
def cluster() -> Iterator[LocalCluster]:
    """The session's shared cluster; tests must not change its shape."""
    with local_cluster() as shared:
        yield shared


@pytest.fixture(scope="session")
def client(cluster: LocalCluster) -> Iterator[Client]:
    """A client of the shared cluster."""
    with Client(cluster) as shared:
        yield shared


@pytest.fixture
def roast(client: Client) -> Client:
    """The shared client, with a RoastPlugin registered (idempotent)."""
    client.register_plugin(RoastPlugin())
    return client


@pytest.fixture
def make_cluster() -> Iterator[Callable[..., tuple[LocalCluster, Client]]]:
    """Factory of private clusters, for tests that change the cluster's shape."""
    made: list[tuple[LocalCluster, Client]] = []

    def make(**kwargs: Any) -> tuple[LocalCluster, Client]:
        own = local_cluster(**kwargs)
        made.append((own, Client(own)))
        return made[-1]

    yield make
    for own, own_client in reversed(made):
        own_client.close()
        own.close()


@pytest.fixture(scope="session")
def measured(client: Client, cms_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Measured:
    """A real coffea run measured by a MetricsCollector and saved (see measured_run)."""
    return measure(client, cms_data, tmp_path_factory.mktemp("measurements"))


@pytest.fixture(scope="module")
def loaded(measured: Measured) -> dict[str, Any]:
    """The saved measurement, loaded back (once per module)."""
    return load_measurement(measured.path)[0]


@pytest.fixture(params=["live", "loaded"])
def metrics(request: pytest.FixtureRequest, measured: Measured) -> dict[str, Any]:
    """The measured metrics, as the collector made them and as loaded from disk."""
    if request.param == "live":
        return measured.metrics
    return request.getfixturevalue("loaded")


@pytest.fixture
def no_pyplot_figures() -> Iterator[None]:
    """No plot may leave a figure in pyplot's global list (plot modules use it for
    every test, through pytestmark)."""
    import matplotlib.pyplot as plt

    assert plt.get_fignums() == []
    yield
    assert plt.get_fignums() == []
