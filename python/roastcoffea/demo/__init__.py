"""The ``roastcoffea demo`` command: a small monitored Dask run, printed as tables.

It starts a ``LocalCluster`` of two single-threaded worker processes, registers
:class:`~roastcoffea.RoastPlugin`, runs CPU-burning and sleeping tasks and a
tree reduction inside ``distributed.span("demo")``, and prints what the plugin
measured.
"""

from __future__ import annotations

from typing import Any

import distributed
from distributed import Client, LocalCluster
from distributed.metrics import time

from roastcoffea.demo.tables import print_snapshot
from roastcoffea.demo.tasks import burn, combine, nap
from roastcoffea.plugin import RoastPlugin, snapshot

#: Inputs per reduce task in the tree reduction.
FAN_IN = 20


def run_demo(n_tasks: int = 120, task_seconds: float = 0.01) -> dict[str, Any]:
    """Run the demo computation on a fresh local cluster and snapshot it.

    Parameters
    ----------
    n_tasks : int, default 120
        Tasks of each kind (``burn`` and ``nap``).
    task_seconds : float, default 0.01
        CPU seconds of each ``burn`` and wall seconds of each ``nap``.

    Returns
    -------
    dict
        The snapshot of the ``demo`` span (see docs/architecture.md).

    Raises
    ------
    ValueError
        If ``n_tasks`` < 1 or ``task_seconds`` < 0.
    """
    if n_tasks < 1:
        raise ValueError(f"n_tasks must be >= 1, got {n_tasks}")
    if not task_seconds >= 0:
        raise ValueError(f"task_seconds must be >= 0, got {task_seconds}")
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        client.register_plugin(RoastPlugin())
        started = time()
        with distributed.span("demo") as span_id:
            seeds = range(n_tasks)
            leaves = client.map(burn, [task_seconds] * n_tasks, seeds, pure=False)
            leaves += client.map(nap, [task_seconds] * n_tasks, seeds, pure=False)
            parts = [
                client.submit(combine, *leaves[i : i + FAN_IN], pure=False)
                for i in range(0, len(leaves), FAN_IN)
            ]
            client.submit(combine, *parts, pure=False).result()
        return snapshot(client, span_id=span_id, t_from=started)


def main(n_tasks: int = 120, task_seconds: float = 0.01) -> int:
    """Run the demo and print its tables; returns the process exit code."""
    print_snapshot(run_demo(n_tasks, task_seconds))
    return 0
