"""The contention rule: the processor's threads waited for a CPU.

The wait is the kernel's run-queue delay of the tasks' threads
(``phase_cpu_wait_seconds``); why there were more runnable threads than cores comes from
the nodes' view (``node_per_host``): the workers' own threads against the cores, other
processes' threads, or a hypervisor giving the CPU to other guests.
"""

from __future__ import annotations

from typing import Any

from roastcoffea.metrics._util import Metrics
from roastcoffea.metrics.diagnosis.finding import Action, Basis, Finding

#: The wait for a CPU is a finding from this % of the processor time (a node that runs the
#: client and the scheduler beside its workers makes them wait about 10 %).
CONTENTION_PERCENT = 20.0
#: Other processes crowd the node when its runnable threads exceed the workers'
#: executing tasks by this many per core, on average.
CROWDED_PER_CORE = 0.25
#: A virtual machine's stolen time is a cause from this % of its CPU time.
STEAL_PERCENT = 5.0


def contention_findings(basis: Basis, out: Metrics) -> list[Finding]:
    """The contention finding when the wait for a CPU reaches :data:`CONTENTION_PERCENT`."""
    waited = basis.waited()
    share = basis.share(waited)
    if basis.cpu_wait is None or share < CONTENTION_PERCENT:
        return []
    hosts = out.get("node_per_host") or {}
    causes, actions = _causes(hosts)
    evidence: dict[str, Any] = {"cpu_wait_seconds": waited, "cpu_wait_percent": share}
    if hosts:
        host = max(hosts, key=lambda h: _crowding(hosts[h]))
        evidence.update({f"node_{key}": value for key, value in hosts[host].items()})
        evidence["node"] = host
    cause = f"{share:.1f}% of the processor time waiting for a CPU" + (
        f": {'; '.join(causes)}" if causes else ""
    )
    return [
        Finding("contention", None, share, basis.at_stake(waited), cause, tuple(actions), evidence)
    ]


def _crowding(node: dict[str, Any]) -> float:
    """Runnable threads per core beyond the cores (0 for an unknown node)."""
    cores, runnable = node.get("cores"), node.get("runnable_mean")
    return (runnable - cores) / cores if cores and runnable is not None else 0.0


def _causes(hosts: dict[str, dict[str, Any]]) -> tuple[list[str], list[Action]]:
    """What the nodes say put more threads than cores in the run queue, and the remedies."""
    causes: list[str] = []
    actions: list[Action] = []
    for host, node in sorted(hosts.items()):
        cores, threads = node.get("cores"), node.get("threads")
        runnable, executing = node.get("runnable_mean"), node.get("executing_mean")
        if cores and threads and threads > cores:
            causes.append(f"the workers on {host} run {threads:.0f} threads on {cores:.0f} cores")
            actions.append(
                Action("at most one worker thread per core (nthreads)", "threads", "fewer")
            )
        if cores and runnable is not None and executing is not None:
            others = runnable - 1 - executing  # 1: the worker's thread reading /proc/stat
            if others > CROWDED_PER_CORE * cores:
                causes.append(
                    f"{host} had {runnable:.1f} runnable threads on {cores:.0f} cores on "
                    f"average, {executing:.1f} of them the workers' tasks: other processes "
                    "share the node"
                )
                actions.append(Action("run the workers on nodes of their own"))
        steal = node.get("steal_percent")
        if steal is not None and steal >= STEAL_PERCENT:
            causes.append(f"the hypervisor of {host} gave {steal:.1f}% of its CPU to other guests")
            actions.append(Action("a dedicated or larger instance"))
    if not actions:
        actions.append(
            Action(
                "the node's other threads (the scheduler, the client, the workers' own) "
                "compete for its cores: fewer worker threads per node",
                "threads",
                "fewer",
            )
        )
    unique = list(dict.fromkeys(actions))
    return causes, unique
