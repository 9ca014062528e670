"""roastcoffea: performance monitoring for Coffea analyses on Dask.

A scheduler plugin and a worker plugin feed a native C engine (ring buffer,
aggregator, time series) with task transitions, worker state and Dask's fine
performance metrics; the client reads the aggregates back as a snapshot.

Examples
--------
>>> from distributed import Client
>>> from roastcoffea import RoastPlugin
>>> client = Client()  # doctest: +SKIP
>>> client.register_plugin(RoastPlugin())  # doctest: +SKIP
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from roastcoffea.plugin import RoastPlugin

try:
    __version__: str = version("roastcoffea")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

__all__ = ["RoastPlugin", "__version__"]
