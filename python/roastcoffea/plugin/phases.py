"""The Dask side of the phase clock: close a task's sum, digest it, send its record.

:func:`digest_task_phases` is the sink of :mod:`roastcoffea.instrument.phases`.
It runs in the task's thread, inside the task, after the work item's last
hooked call returned:

* ``other`` becomes what the other phases leave of the time since Dask started
  the task (``thread_state.start_time``, the clock of the task's ``startstops``),
  so the phases of a task add up to its compute time by construction;
* each phase goes to Dask's fine performance metrics with
  ``context_meter.digest_metric``: Dask files it under the task's
  ``("execute", span, prefix, activity, unit)`` in ``Worker.digests_total``,
  which the worker plugin already carries per worker, prefix and span. The units
  are not ``"seconds"``, so Dask's own ``thread-cpu`` and ``thread-noncpu`` of
  the task stay exactly what they were;
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


def digest_task_phases(task: TaskPhases) -> None:
    """Close ``task``'s sum against Dask's task start, digest it and queue its record."""
    started = getattr(thread_state, "start_time", None)
    ran = task.close()
    elapsed = time.time() - started if isinstance(started, float) else ran
    wall, cpu, codecs = task.wall, task.cpu, task.codecs  # each a new dict: read once
    wall["other"] = max(elapsed - sum(wall[p] for p in PHASES if p != "other"), 0.0)
    digest = context_meter.digest_metric
    for phase in PHASES:
        if phase == "output" and not task.output_measured:
            continue
        digest(PHASE_ACTIVITY.format(phase), wall[phase], WALL)
        digest(PHASE_ACTIVITY.format(phase), cpu[phase], CPU)
    digest(PHASE_ACTIVITY.format("read"), task.read_bytes, BYTES)
    digest(PHASE_ACTIVITY.format("decompress"), sum(c[3] for c in codecs.values()), BYTES)
    for name, (codec_wall, codec_cpu, size_in, size_out) in codecs.items():
        activity = CODEC_ACTIVITY.format(name)
        digest(activity, codec_wall, WALL)
        digest(activity, codec_cpu, CPU)
        digest(activity, size_out, BYTES)
        digest(activity, size_in, COMPRESSED)
    digest(TASKS_ACTIVITY, 1, COUNT)
    digest(CLOCK_ACTIVITY, task.switches + task.nested, COUNT)
    digest(CLOCK_ACTIVITY, clock_seconds(task), WALL)
    digest(CLOCK_ACTIVITY, task.cpu_split_bound, CPU)
    if task.output_measured:
        digest(OUTPUTS_ACTIVITY, 1, COUNT)
    running = running_task()
    if running.plugin is not None and hasattr(running.plugin, "add_phases"):
        record = phase_record(task, wall, cpu, codecs, started, elapsed)
        running.plugin.add_phases(running.key, record)


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
