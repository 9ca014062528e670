"""The Dask side of the phase clock: close a task's sum, digest it, send its record.

:func:`digest_task_phases` is the sink of :mod:`roastcoffea.instrument.phases`.
It runs in the task's thread, inside the task, after the work item's last
hooked call returned:

* ``other`` becomes what the other phases leave of the time since Dask started
  the task (``thread_state.start_time``, the clock of the task's ``startstops``),
  so the phases of a task add up to its compute time by construction;
* each phase goes to Dask's fine performance metrics under the task's
  ``("execute", span, prefix, activity, unit)`` in ``Worker.digests_total``,
  which the worker plugin already carries per worker, prefix and span. The worker
  plugin files them with ``Worker.digest_metric`` when the task ends, on the event
  loop, where Dask files the task's own metrics; a task whose record the plugin
  does not hold sends them through ``context_meter.digest_metric``, which Dask
  files the same way. The units are not ``"seconds"``, so Dask's own
  ``thread-cpu`` and ``thread-noncpu`` of the task stay exactly what they were;
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
from roastcoffea.phase_vocabulary import (
    BYTES,
    CLOCK_ACTIVITY,
    CODEC_ACTIVITY,
    COMPRESSED,
    COUNT,
    CPU,
    OUTPUTS_ACTIVITY,
    PHASE_ACTIVITY,
    PHASES,
    TASKS_ACTIVITY,
    WALL,
)
from roastcoffea.plugin.task import running_task

#: A fine metric of a task, as ``context_meter.digest_metric`` takes it: (activity, value, unit).
Digest = tuple[str, float, str]


def digest_task_phases(task: TaskPhases) -> None:
    """Close ``task``'s sum against Dask's task start, digest it and queue its record."""
    started = getattr(thread_state, "start_time", None)
    ran = task.close()
    elapsed = time.time() - started if isinstance(started, float) else ran
    wall, cpu, codecs = task.wall, task.cpu, task.codecs  # each a new dict: read once
    wall["other"] = max(elapsed - sum(wall[p] for p in PHASES if p != "other"), 0.0)
    digests = phase_digests(task, wall, cpu, codecs)
    running = running_task()
    if running.plugin is not None and hasattr(running.plugin, "add_phases"):
        record = phase_record(task, wall, cpu, codecs, started, elapsed)
        if running.plugin.add_phases(running.key, record, digests):
            return  # the plugin files the digests when the task ends
    digest = context_meter.digest_metric
    for label, value, unit in digests:
        digest(label, value, unit)


def phase_digests(
    task: TaskPhases,
    wall: dict[str, float],
    cpu: dict[str, float],
    codecs: dict[str, list[float]],
) -> list[Digest]:
    """The ``(activity, value, unit)`` fine metrics of a task's phases, its ``other`` closed."""
    digests: list[Digest] = []
    for phase in PHASES:
        if phase == "output" and not task.output_measured:
            continue
        digests.append((PHASE_ACTIVITY.format(phase), wall[phase], WALL))
        digests.append((PHASE_ACTIVITY.format(phase), cpu[phase], CPU))
    digests.append((PHASE_ACTIVITY.format("read"), task.read_bytes, BYTES))
    digests.append((PHASE_ACTIVITY.format("decompress"), sum(c[3] for c in codecs.values()), BYTES))
    for name, (codec_wall, codec_cpu, size_in, size_out) in codecs.items():
        activity = CODEC_ACTIVITY.format(name)
        digests.append((activity, codec_wall, WALL))
        digests.append((activity, codec_cpu, CPU))
        digests.append((activity, size_out, BYTES))
        digests.append((activity, size_in, COMPRESSED))
    digests.append((TASKS_ACTIVITY, 1, COUNT))
    digests.append((CLOCK_ACTIVITY, task.switches + task.nested, COUNT))
    digests.append((CLOCK_ACTIVITY, clock_seconds(task), WALL))
    digests.append((CLOCK_ACTIVITY, task.cpu_split_bound, CPU))
    if task.output_measured:
        digests.append((OUTPUTS_ACTIVITY, 1, COUNT))
    return digests


def phase_record(
    task: TaskPhases,
    wall: dict[str, float],
    cpu: dict[str, float],
    codecs: dict[str, list[float]],
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
        "read_bytes": task.read_bytes,
        "codecs": codecs,
    }


def _plain(value: Any) -> str | int | None:
    return value if isinstance(value, (str, int)) else None
