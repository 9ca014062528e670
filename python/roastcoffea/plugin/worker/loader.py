"""The worker plugin as it travels: a loader that never costs the user a worker.

Dask unpickles a worker plugin in the worker's ``register-worker`` reply; if
its class cannot be imported there, the worker fails to start. So the
scheduler sends :class:`WorkerPluginLoader`, pickled *by value*: it takes the
values of the protocol's names along and nothing of roastcoffea, and a worker
without the package can unpickle it. Its ``setup`` imports :class:`RoastWorkerPlugin` and
puts it in its own place in ``worker.plugins``, so the worker then calls the
real plugin directly. Where the import fails, the worker computes unmonitored
and says why in its heartbeat metric and in its state handler, which the
scheduler plugin reports (:data:`UNMONITORED`).
"""

from __future__ import annotations

import sys
from typing import Any

import cloudpickle
from distributed.diagnostics.plugin import WorkerPlugin

# Pickled by value, the class takes these names' values along: a worker needs
# nothing of roastcoffea to unpickle it.
from roastcoffea.plugin.protocol import PLUGIN_NAME as _NAME
from roastcoffea.plugin.protocol import UNMONITORED
from roastcoffea.plugin.protocol import WORKER_STATE_HANDLER as _STATE_HANDLER


class WorkerPluginLoader(WorkerPlugin):
    """Loads :class:`RoastWorkerPlugin` on a worker, or marks the worker unmonitored.

    Parameters
    ----------
    options : dict
        Keyword arguments of ``RoastWorkerPlugin``.
    """

    name = _NAME
    idempotent = True

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options

    def setup(self, worker: Any) -> Any:
        """Install the real plugin in this one's place, or the unmonitored answers."""
        try:
            from roastcoffea.plugin.worker.plugin import RoastWorkerPlugin
        except Exception as exc:  # any failure to load: never fail the worker
            answer = {UNMONITORED: f"{type(exc).__name__}: {exc}"}
            worker.metrics[_NAME] = lambda _worker: answer
            worker.handlers[_STATE_HANDLER] = lambda: answer
            return None
        plugin = RoastWorkerPlugin(**self.options)
        worker.plugins[self.name] = plugin
        return plugin.setup(worker)

    def teardown(self, worker: Any) -> None:
        """Remove the unmonitored answers (the real plugin tears itself down)."""
        worker.metrics.pop(_NAME, None)
        worker.handlers.pop(_STATE_HANDLER, None)


def dumps_by_value(options: dict[str, Any]) -> bytes:
    """A pickled :class:`WorkerPluginLoader` that unpickles without roastcoffea.

    Parameters
    ----------
    options : dict
        Keyword arguments of ``RoastWorkerPlugin``.

    Returns
    -------
    bytes
    """
    module = sys.modules[__name__]
    cloudpickle.register_pickle_by_value(module)
    try:
        return cloudpickle.dumps(WorkerPluginLoader(options))
    finally:
        cloudpickle.unregister_pickle_by_value(module)
