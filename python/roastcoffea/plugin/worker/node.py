"""The node a worker runs on, as its heartbeat tells the scheduler: cores, load, steal.

:class:`NodeView` is installed as ``worker.metrics["roastcoffea-node"]``
(:data:`~roastcoffea.plugin.protocol.NODE_METRIC`): Dask calls it
on the event loop at every heartbeat and sends what it returns in ``ws.metrics``, where
the scheduler's sampler reads it into the worker's series (the ``node_*`` columns of
``native/include/roast/series.h``). It reads two small files of Linux's ``/proc``:

- ``/proc/stat``: the node's runnable threads (``procs_running``, the worker's own
  included) and the CPU time its host stole from it (the ``steal`` field of the ``cpu``
  line, on a virtual machine), as a percent of all the node's CPU time since the last
  heartbeat;
- ``/proc/loadavg``: the 1-minute load average.

and the online cores (``os.cpu_count()``). Where a file is missing (not Linux) its
values are None: the series stores NaN, and the metrics say the node was not seen.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from roastcoffea.plugin.protocol import NodeReading

STAT = Path("/proc/stat")
LOADAVG = Path("/proc/loadavg")
#: The fields of ``/proc/stat``'s ``cpu`` line, in its order.
CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


class NodeView:
    """The node's cores, runnable threads, load and steal, at each call (a heartbeat).

    Never raises: a reading that fails is None.
    """

    def __init__(self, stat: Path = STAT, loadavg: Path = LOADAVG) -> None:
        self._stat, self._loadavg = stat, loadavg
        self._last: tuple[int, int] | None = None  # (steal, total) jiffies at the last call

    def __call__(self, worker: Any = None) -> NodeReading:
        runnable, steal = self._read_stat()
        return {
            "cores": float(os.cpu_count() or 0) or None,
            "runnable": runnable,
            "load": self._read_load(),
            "steal_percent": steal,
        }

    def _read_stat(self) -> tuple[float | None, float | None]:
        """``procs_running``, and the stolen percent of the CPU time since the last call."""
        runnable = steal = None
        try:
            for line in self._stat.read_text().splitlines():
                if line.startswith("procs_running "):
                    runnable = float(line.split()[1])
                elif line.startswith("cpu ") and len(line.split()) > len(CPU_FIELDS):
                    jiffies = [int(v) for v in line.split()[1 : 1 + len(CPU_FIELDS)]]
                    now = (jiffies[CPU_FIELDS.index("steal")], sum(jiffies))
                    if self._last is not None and now[1] > self._last[1]:
                        steal = 100.0 * (now[0] - self._last[0]) / (now[1] - self._last[1])
                    self._last = now
        except (OSError, ValueError, IndexError):
            return None, None
        return runnable, steal

    def _read_load(self) -> float | None:
        try:
            return float(self._loadavg.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None
