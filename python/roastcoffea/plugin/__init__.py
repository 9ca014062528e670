"""Dask wiring: the scheduler/worker plugin pair and the client-side calls.

Only this package touches Dask internals, in a room per role:

* :mod:`~roastcoffea.plugin.scheduler`: :class:`RoastPlugin`, its sampler, spans and runs,
  the live stream and the Prometheus export;
* :mod:`~roastcoffea.plugin.worker`: :class:`RoastWorkerPlugin`, the phase clock's sink and
  the loader that carries the plugin to a worker;
* :mod:`~roastcoffea.plugin.client`: :func:`snapshot`, :func:`flush`, :func:`stop`,
  :class:`LiveFeed`, :func:`run_span` and a collector's session (entry and exit);
* :mod:`~roastcoffea.plugin.protocol`: the names the halves share (handlers, topics,
  annotations); :mod:`~roastcoffea.plugin.dask_versions`: what differs between Dask versions.

The names are imported on first use: a worker unpickling its plugin loads
:mod:`roastcoffea.plugin.worker` and not the scheduler's and client's modules,
whose functions, classes and constants would otherwise live in the worker for
its whole life, each one more object for every full collection of its garbage
collector to traverse.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from roastcoffea.plugin.client.calls import LiveFeed, flush, snapshot, stop
    from roastcoffea.plugin.client.run import run_span
    from roastcoffea.plugin.scheduler.plugin import RoastPlugin
    from roastcoffea.plugin.worker.plugin import RoastWorkerPlugin

_LAZY = {
    "LiveFeed": "roastcoffea.plugin.client.calls",
    "flush": "roastcoffea.plugin.client.calls",
    "snapshot": "roastcoffea.plugin.client.calls",
    "stop": "roastcoffea.plugin.client.calls",
    "RoastPlugin": "roastcoffea.plugin.scheduler.plugin",
    "RoastWorkerPlugin": "roastcoffea.plugin.worker.plugin",
    "run_span": "roastcoffea.plugin.client.run",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'roastcoffea.plugin' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "LiveFeed",
    "RoastPlugin",
    "RoastWorkerPlugin",
    "flush",
    "run_span",
    "snapshot",
    "stop",
]
