"""The table of :mod:`roastcoffea.metrics.node`: the nodes the workers ran on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roastcoffea.report.tables.cells import Cell, Column, TableData, number, percent, show

NODES_TITLE = "Nodes"

#: (heading, field of a host's row, format).
NODE_COLUMNS = (
    ("Cores", "cores", number(0)),
    ("Worker Threads", "threads", number(0)),
    ("Tasks Executing (mean)", "executing_mean", number(2)),
    ("Runnable Threads (mean)", "runnable_mean", number(2)),
    ("Runnable Threads (max)", "runnable_max", number(0)),
    ("Load (1 min, mean)", "load_mean", number(2)),
    ("CPU Stolen", "steal_percent", percent),
)


def node_table(metrics: Mapping[str, Any]) -> TableData | None:
    """Each host's cores, the workers' threads and the node's runnable threads; None unseen."""
    hosts = metrics.get("node_per_host")
    if not isinstance(hosts, Mapping) or not hosts:
        return None
    rows = tuple(
        (Cell(str(host)), *(show(row.get(field), fmt) for _, field, fmt in NODE_COLUMNS))
        for host, row in hosts.items()
        if isinstance(row, Mapping)
    )
    columns = (
        Column("Host", fit="name"),
        *(Column(name, numeric=True) for name, _, _ in NODE_COLUMNS),
    )
    note = (
        "Runnable threads: every process's on the node, the workers' tasks and the thread "
        "reading them included; more than the cores means threads waited for a CPU. "
        "CPU stolen: the share a hypervisor gave to other guests."
    )
    return TableData(NODES_TITLE, columns, rows, note)
