"""The Dask side of the phase clock: close a task's sum, digest it, send its record.

:func:`digest_task_phases` is the sink of :mod:`roastcoffea.instrument.phases`.
It runs in the task's thread, inside the task, after the work item's last
hooked call returned:

* ``other`` becomes what the other phases leave of the time since Dask started
  the task (``thread_state.start_time``, the clock of the task's ``startstops``),
  so the phases of a task add up to its compute time by construction;
* the phases become digests under the task's ``("execute", span, prefix,
  activity, unit)``, which the worker plugin sends with the task's records when
  it ends (the scheduler adds them to its digest table: a result the scheduler
  knows of always has its phases counted, whatever happens to the worker later);
  the plugin also sums them per span and prefix and files the sums with
  ``Worker.digest_metric`` before each heartbeat payload, for Dask's own span
  totals (the payloads leave them out). Without the plugin they go through
  ``context_meter.digest_metric``, which Dask files when the task ends. The units
  are not ``"seconds"``, so Dask's own ``thread-cpu`` and ``thread-noncpu`` of the
  task stay exactly what they were;
* the worker plugin sends a ``kind="phases"`` record with the task's phases,
  its work item and its thread, for per-chunk views.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from distributed.metrics import context_meter
from distributed.worker import thread_state

from roastcoffea.instrument.phases import TaskPhases, clock_seconds
from roastcoffea.phase_vocabulary import PHASES, PhaseDigests, digest_labels
from roastcoffea.plugin.task import running_task


def digest_task_phases(task: TaskPhases) -> None:
    """Close ``task``'s sum against Dask's task start, digest it and queue its record."""
    started = getattr(thread_state, "start_time", None)
    ran = task.close()
    elapsed = time.time() - started if isinstance(started, float) else ran
    wall, cpu, codecs = task.wall, task.cpu, task.codecs  # each a new dict: read once
    cpu_wait = task.cpu_wait
    wall["other"] = max(elapsed - sum(wall[p] for p in PHASES if p != "other"), 0.0)
    digests = phase_digests(task, wall, cpu, codecs, cpu_wait)
    running = running_task()
    if running.plugin is not None and hasattr(running.plugin, "add_phases"):
        record = phase_record(task, wall, cpu, codecs, cpu_wait, started, elapsed)
        if running.plugin.add_phases(running.key, record, digests):
            return  # the plugin sums the digests when the task ends
    layout, values = digests
    digest = context_meter.digest_metric
    for (activity, unit), value in zip(digest_labels(layout), values, strict=True):
        digest(activity, value, unit)


def phase_digests(
    task: TaskPhases,
    wall: dict[str, float],
    cpu: dict[str, float],
    codecs: dict[str, list[float]],
    cpu_wait: dict[str, float] | None,
) -> PhaseDigests:
    """The fine metrics of a task's phases, its ``other`` closed: the values, in the order
    of the ``(activity, unit)`` labels of its layout
    (:func:`~roastcoffea.phase_vocabulary.digest_labels`).

    Values without their labels: a worker sums them per span, prefix and layout
    element by element, and files each label once per heartbeat.
    """
    values: list[float] = []
    for phase in PHASES:
        if phase != "output" or task.output_measured:
            values += (wall[phase], cpu[phase])
    values += (task.read_bytes, sum(c[3] for c in codecs.values()))
    for codec_wall, codec_cpu, size_in, size_out in codecs.values():
        values += (codec_wall, codec_cpu, size_out, size_in)
    values += (1, task.switches + task.nested, clock_seconds(task), task.cpu_split_bound)
    if task.output_measured:
        values.append(1)
    helpers = helper_phases(task)
    if helpers:
        helper_wall, helper_cpu = task.helper_wall, task.helper_cpu
        for phase in helpers:
            values += (helper_wall[phase], helper_cpu[phase])
        values.append(task.helper_runs)
    if cpu_wait is not None:
        for phase in PHASES:
            if phase != "output" or task.output_measured:
                values.append(cpu_wait[phase])
        values += (task.cpu_wait_bound, 1)
    return (task.output_measured, tuple(codecs), helpers, cpu_wait is not None), values


def helper_phases(task: TaskPhases) -> tuple[str, ...]:
    """The phases the task's helper threads ran (``interpret``, where every helper call
    starts, when none lasted a measurable time); none without helper runs."""
    if not task.helper_runs:
        return ()
    wall = task.helper_wall
    return tuple(p for p in PHASES if wall[p] > 0) or ("interpret",)


def phase_record(
    task: TaskPhases,
    wall: dict[str, float],
    cpu: dict[str, float],
    codecs: dict[str, list[float]],
    cpu_wait: dict[str, float] | None,
    started: float | None,
    elapsed: float,
) -> dict[str, Any]:
    """The ``kind="phases"`` fields of a task, its ``other`` closed (the plugin adds the
    task's identity)."""
    item = task.item
    output = None if not task.output_measured else wall["output"]
    return {
        "dataset": _plain(getattr(item, "dataset", None)),
        "file": _plain(getattr(item, "filename", None)),
        "entry_start": _plain(getattr(item, "entrystart", None)),
        "entry_stop": _plain(getattr(item, "entrystop", None)),
        "thread": threading.get_ident(),
        "t_start": started,
        "elapsed": elapsed,
        "wall": {p: (output if p == "output" else wall[p]) for p in PHASES},
        "cpu": {p: (None if p == "output" and output is None else cpu[p]) for p in PHASES},
        "cpu_wait": None
        if cpu_wait is None
        else {p: (None if p == "output" and output is None else cpu_wait[p]) for p in PHASES},
        "read_bytes": task.read_bytes,
        "codecs": codecs,
        "helpers": _helpers(task),
    }


def _helpers(task: TaskPhases) -> dict[str, Any] | None:
    """The task's work on helper threads: calls, and wall and CPU per phase; None without."""
    phases = helper_phases(task)
    if not phases:
        return None
    wall, cpu = task.helper_wall, task.helper_cpu
    return {
        "runs": task.helper_runs,
        "wall": {p: wall[p] for p in phases},
        "cpu": {p: cpu[p] for p in phases},
    }


def _plain(value: Any) -> str | int | None:
    return value if isinstance(value, (str, int)) else None
