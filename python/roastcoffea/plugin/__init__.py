"""Dask wiring: the scheduler/worker plugin pair and the client-side calls.

Only this package touches Dask internals. :class:`RoastPlugin` runs on the
scheduler and installs :class:`RoastWorkerPlugin` on every worker; the
functions :func:`snapshot`, :func:`flush` and :func:`stop` talk to it from a
client, :class:`LiveFeed` receives its live deltas, and
:mod:`roastcoffea.plugin.session` is a collector's entry and exit.
"""

from roastcoffea.plugin.client import LiveFeed, flush, snapshot, stop
from roastcoffea.plugin.scheduler import RoastPlugin
from roastcoffea.plugin.worker import RoastWorkerPlugin

__all__ = [
    "LiveFeed",
    "RoastPlugin",
    "RoastWorkerPlugin",
    "flush",
    "snapshot",
    "stop",
]
