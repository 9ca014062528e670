"""What one event costs: processor CPU per event, per dataset and per phase.

Sources: Dask's ``thread-cpu`` of the processor prefixes
(``processor_cpu_time_seconds``) over ``total_events`` for the run; the phase
records' ``cpu`` seconds over their work items' events (``entry_stop -
entry_start``) per dataset and phase, each work item once (its last execution).
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import roastcoffea.phase_vocabulary as vocab
from roastcoffea.metrics._util import Metrics, divide, is_number

if TYPE_CHECKING:
    from roastcoffea.metrics import MetricsInputs

#: The row of a dataset's whole cost (every phase).
ALL = "all"

#: (dataset, phase) -> [(cpu seconds, events) of each chunk]
ChunkCosts = dict[tuple[str, str], list[tuple[float, int]]]


def chunk_costs(records: list[dict[str, Any]]) -> ChunkCosts:
    """Each chunk's CPU seconds and events per (dataset, phase), ``"all"`` included.

    A work item run twice counts once, by its last record; records without an
    entry range or CPU seconds are left out.
    """
    last: dict[tuple[Any, ...], dict[str, Any]] = {}
    for record in records:
        item = tuple(record.get(f) for f in ("dataset", "file", "entry_start", "entry_stop"))
        if is_number(item[2]) and is_number(item[3]) and isinstance(record.get("cpu"), dict):
            last[item] = record
    costs: ChunkCosts = defaultdict(list)
    for (dataset, _, start, stop), record in last.items():
        events = int(stop - start)
        cpu = {p: s for p, s in record["cpu"].items() if p in vocab.PHASES and is_number(s)}
        for phase, seconds in cpu.items():
            costs[str(dataset), phase].append((seconds, events))
        costs[str(dataset), ALL].append((math.fsum(cpu.values()), events))
    return dict(costs)


def per_event_us(chunks: list[tuple[float, int]]) -> float | None:
    """Σ CPU seconds / Σ events, in microseconds; None without events."""
    events = sum(n for _, n in chunks)
    return 1e6 * math.fsum(s for s, _ in chunks) / events if events else None


def compute(inputs: MetricsInputs, out: Metrics) -> None:
    """Put ``cpu_us_per_event``, ``events_per_cpu_second`` and ``cost_per_event_us``."""
    out.derive(
        "cpu_us_per_event",
        lambda cpu, events: divide(1e6 * cpu, events, "total_events"),
        "processor_cpu_time_seconds",
        "total_events",
    )
    out.derive(
        "events_per_cpu_second",
        lambda events, cpu: divide(events, cpu, "processor_cpu_time_seconds"),
        "total_events",
        "processor_cpu_time_seconds",
    )
    costs = chunk_costs(inputs.phases)
    if not costs:
        out.missing("cost_per_event_us", "no phase record with its work item's entry range")
        return
    table: dict[str, dict[str, float]] = defaultdict(dict)
    for (dataset, phase), chunks in sorted(costs.items()):
        value = per_event_us(chunks)
        if value is not None:
            table[dataset][phase] = value
    out.put("cost_per_event_us", dict(table))
