"""Dask wiring: the scheduler/worker plugin pair and the client-side calls.

Only this package touches Dask internals. :class:`RoastPlugin` runs on the
scheduler and installs :class:`RoastWorkerPlugin` on every worker; the
functions :func:`snapshot`, :func:`flush` and :func:`stop` talk to it from a
client, :class:`LiveFeed` receives its live deltas, :func:`run_span` opens a run's
span, and
:mod:`roastcoffea.plugin.session` is a collector's entry and exit.

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
    from roastcoffea.plugin.client import LiveFeed, flush, snapshot, stop
    from roastcoffea.plugin.run import run_span
    from roastcoffea.plugin.scheduler import RoastPlugin
    from roastcoffea.plugin.worker import RoastWorkerPlugin

_LAZY = {
    "LiveFeed": "roastcoffea.plugin.client",
    "flush": "roastcoffea.plugin.client",
    "snapshot": "roastcoffea.plugin.client",
    "stop": "roastcoffea.plugin.client",
    "RoastPlugin": "roastcoffea.plugin.scheduler",
    "RoastWorkerPlugin": "roastcoffea.plugin.worker",
    "run_span": "roastcoffea.plugin.run",
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
