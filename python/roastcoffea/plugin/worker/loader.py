"""The worker plugin as it travels: a loader that never costs the user a worker.

Dask unpickles a worker plugin in the worker's ``register-worker`` reply; if
its class cannot be imported there, the worker fails to start. So the
scheduler sends :class:`WorkerPluginLoader`, pickled *by value*: it takes the
values of the protocol's names along and nothing of roastcoffea, and a worker
without the package can unpickle it. Its ``setup`` imports :class:`RoastWorkerPlugin` and
puts it in its own place in ``worker.plugins``, so the worker then calls the
real plugin directly. Where the import or the real plugin's ``setup`` fails,
the worker computes unmonitored and says why in its heartbeat metric and in its
state handler, which the scheduler plugin reports (:data:`UNMONITORED`): each
run that worker computed for names it in ``unmonitored_workers``.
"""

from __future__ import annotations

import contextlib
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
            return self._unmonitored(worker, f"{type(exc).__name__}: {exc}")
        plugin = RoastWorkerPlugin(**self.options)
        try:
            plugin.setup(worker)
        except Exception as exc:  # what it installed is removed, the worker computes on
            with contextlib.suppress(Exception):
                plugin.teardown(worker)
            reason = f"RoastWorkerPlugin.setup failed: {type(exc).__name__}: {exc}"
            return self._unmonitored(worker, reason)
        worker.plugins[self.name] = plugin
        return None

    def _unmonitored(self, worker: Any, reason: str) -> None:
        """Answer the heartbeat and the state handler with why the worker is unmonitored."""
        answer = {UNMONITORED: reason}
        worker.metrics[_NAME] = lambda _worker: answer
        worker.handlers[_STATE_HANDLER] = lambda: answer
        return None

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
