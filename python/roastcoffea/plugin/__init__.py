"""Dask wiring: the scheduler/worker plugin pair and the client-side calls.

Only this package touches Dask internals. :class:`RoastPlugin` runs on the
scheduler and installs :class:`RoastWorkerPlugin` on every worker; the
functions :func:`snapshot`, :func:`flush` and :func:`stop` talk to it from a
client.
"""

from roastcoffea.plugin.client import flush, snapshot, stop
from roastcoffea.plugin.scheduler import RoastPlugin
from roastcoffea.plugin.worker import RoastWorkerPlugin

__all__ = ["RoastPlugin", "RoastWorkerPlugin", "flush", "snapshot", "stop"]
