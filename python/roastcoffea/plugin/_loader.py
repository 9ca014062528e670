"""The worker plugin as it travels: a loader that never costs the user a worker.

Dask unpickles a worker plugin in the worker's ``register-worker`` reply; if
its class cannot be imported there, the worker fails to start. So the
scheduler sends :class:`WorkerPluginLoader`, pickled *by value*: this module
imports nothing of roastcoffea at module level, and a worker without the
package can unpickle it. Its ``setup`` imports :class:`RoastWorkerPlugin` and
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

#: Key of the answer of a worker that cannot load roastcoffea.
UNMONITORED = "unmonitored"

#: The worker's heartbeat metric and state handler (PLUGIN_NAME and
#: WORKER_STATE_HANDLER of roastcoffea.plugin._workers, repeated here so that
#: nothing of roastcoffea is needed to unpickle this module's class).
_NAME = "roastcoffea"
_STATE_HANDLER = "roastcoffea_worker_state"


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
            from roastcoffea.plugin.worker import RoastWorkerPlugin
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
