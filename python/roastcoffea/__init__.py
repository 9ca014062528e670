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
from typing import TYPE_CHECKING, Any

from roastcoffea.errors import DecodeError

if TYPE_CHECKING:
    from roastcoffea.collector import MetricsCollector
    from roastcoffea.columnar import to_arrow, to_pandas
    from roastcoffea.instrument import (
        BaseInstrumentationContext,
        track_bytes,
        track_memory,
        track_metrics,
        track_phases,
        track_section,
        track_time,
    )
    from roastcoffea.measurement import load_measurement, save_measurement
    from roastcoffea.metrics.regression import compare_costs, compare_runs, regressions_above
    from roastcoffea.plugin import RoastPlugin

try:  # written by setuptools-scm at build time, from the git tags
    from roastcoffea._version import __version__
except ImportError:  # a source tree that was never built
    __version__ = "0+unknown"

#: Names imported on first use, so that ``import roastcoffea`` loads neither
#: Dask nor the native extension: reading a saved measurement needs neither,
#: and processors running on workers need only the instrumentation.
_LAZY = {
    "RoastPlugin": "roastcoffea.plugin",
    "MetricsCollector": "roastcoffea.collector",
    "compare_costs": "roastcoffea.metrics.regression",
    "compare_runs": "roastcoffea.metrics.regression",
    "regressions_above": "roastcoffea.metrics.regression",
    "load_measurement": "roastcoffea.measurement",
    "save_measurement": "roastcoffea.measurement",
    "to_arrow": "roastcoffea.columnar",
    "to_pandas": "roastcoffea.columnar",
    "BaseInstrumentationContext": "roastcoffea.instrument",
    "track_bytes": "roastcoffea.instrument",
    "track_memory": "roastcoffea.instrument",
    "track_metrics": "roastcoffea.instrument",
    "track_phases": "roastcoffea.instrument",
    "track_section": "roastcoffea.instrument",
    "track_time": "roastcoffea.instrument",
}


async def dask_setup(server: Any) -> None:
    """``dask scheduler --preload roastcoffea``: see :mod:`roastcoffea.plugin.scheduler.preload`."""
    from roastcoffea.plugin.scheduler.preload import dask_setup as setup

    await setup(server)


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
    "compare_costs",
    "compare_runs",
    "load_measurement",
    "regressions_above",
    "save_measurement",
    "to_arrow",
    "to_pandas",
    "track_bytes",
    "track_memory",
    "track_metrics",
    "track_phases",
    "track_section",
    "track_time",
]
