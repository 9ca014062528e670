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

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from roastcoffea._native import DecodeError
from roastcoffea.instrument import (
    BaseInstrumentationContext,
    track_bytes,
    track_memory,
    track_metrics,
    track_section,
    track_time,
)
from roastcoffea.plugin import RoastPlugin

try:
    __version__: str = version("roastcoffea")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

#: Names imported on first use: the collector side pulls in rich and the
#: metrics code, which processors running on workers never need.
_LAZY = {
    "MetricsCollector": "roastcoffea.collector",
    "load_measurement": "roastcoffea.measurement",
    "save_measurement": "roastcoffea.measurement",
}


def __getattr__(name: str) -> Any:
    # The figures (roastcoffea.plots and its plot_* functions) pull in matplotlib.
    if name == "plots":
        return import_module("roastcoffea.plots")
    module = "roastcoffea.plots" if name.startswith("plot_") else _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'roastcoffea' has no attribute {name!r}")
    try:
        value = getattr(import_module(module), name)
    except AttributeError:
        raise AttributeError(f"module 'roastcoffea' has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | {"plots"})


__all__ = [
    "BaseInstrumentationContext",
    "DecodeError",
    "MetricsCollector",
    "RoastPlugin",
    "__version__",
    "load_measurement",
    "save_measurement",
    "track_bytes",
    "track_memory",
    "track_metrics",
    "track_section",
    "track_time",
]
