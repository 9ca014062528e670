"""Where the run's wall time went: start-up, steady state, tail and finish.

Source: the processor tasks' ``compute`` intervals as Dask recorded them in the
tasks' ``startstops`` (scheduler clock): the phase records' ``t_start`` and
``t_stop``, else the chunk records' ``task_start`` and ``task_end``; the threads
of the workers live in the collector's window (their ``nthreads``, between the
scheduler adding and removing them). The four stages tile the window:

* start-up: block entry to the first processor task's start (preprocessing,
  graph submission);
* steady: to the last instant every thread ran a processor task;
* tail: from there to the last processor task's end (fewer tasks than threads);
* finish: to the block's exit (reduction, gathering the output).

A thread-second is idle when the thread runs no processor task.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from roastcoffea.metrics._util import Metrics, is_number

if TYPE_CHECKING:
    from roastcoffea.metrics import MetricsInputs

STAGES = ("startup", "steady", "tail", "finish")
KEYS = (
    "wall_split",
    "wall_split_source",
    "idle_thread_seconds",
    "processing_seconds",
    "packing_bound_seconds",
    "longest_chunk_seconds",
    "tail_chunks",
    "tail_cause",
)
#: A chunk, file or worker is slow at this multiple of the median.
SLOW = 2.0


@dataclass(frozen=True)
class Task:
    """One execution of a processor task: Dask's compute interval and what it read."""

    key: str | None
    start: float
    stop: float
    worker: str | None
    dataset: str | None
    file: str | None
    wall: dict[str, float] | None  # its phases, when the phase clock measured it

    @property
    def seconds(self) -> float:
        return self.stop - self.start


#: Where the task intervals come from: the records, and their start and stop fields.
SOURCES = {"phase records": ("t_start", "t_stop"), "chunk records": ("task_start", "task_end")}


def tasks_of(inputs: MetricsInputs) -> tuple[list[Task], str]:
    """The processor task executions and where they come from (phase or chunk records)."""
    phased = [_task(r, *SOURCES["phase records"]) for r in inputs.phases]
    if phased and all(t is not None for t in phased):
        return [t for t in phased if t is not None], "phase records"
    chunked = [_task(r, *SOURCES["chunk records"]) for r in inputs.chunks]
    if chunked and all(t is not None for t in chunked):
        return [t for t in chunked if t is not None], "chunk records"
    return [], _why_none(phased, chunked)


def _task(record: dict[str, Any], start_field: str, stop_field: str) -> Task | None:
    """A record's task, its phases when it carries them; None without both times."""
    start, stop = record.get(start_field), record.get(stop_field)
    if not (is_number(start) and is_number(stop)):
        return None
    wall = record.get("wall")
    return Task(
        record.get("task_key"),
        start,
        stop,
        record.get("worker"),
        record.get("dataset"),
        record.get("file"),
        {p: s for p, s in wall.items() if is_number(s)} if isinstance(wall, dict) else None,
    )


def _why_none(phased: list[Any], chunked: list[Any]) -> str:
    if phased:
        return f"{phased.count(None)} of {len(phased)} phase records lack Dask's task stop"
    if chunked:
        return f"{chunked.count(None)} of {len(chunked)} chunk records lack the task's times"
    return "no phase or chunk record of a processor task"


def thread_steps(inputs: MetricsInputs) -> list[tuple[float, int]]:
    """``(time, change of the thread count)`` of the workers in the window, in time order.

    A worker counts its largest ``nthreads`` sample from the scheduler adding it
    to its removal (or the window's end).
    """
    steps: list[tuple[float, int]] = []
    workers = inputs.snapshot.get("workers", {})
    for address, series in inputs.snapshot.get("series", {}).items():
        threads = series.get("columns", {}).get("nthreads", {}).get("max", [])
        counted = [int(t) for t in threads if is_number(t)]
        if not counted or max(counted) <= 0:
            continue
        info = workers.get(address, {})
        added = info.get("added") if is_number(info.get("added")) else inputs.t_start
        removed = info.get("removed") if is_number(info.get("removed")) else inputs.t_end
        begin, end = max(added, inputs.t_start), min(removed, inputs.t_end)
        if end > begin:
            steps += [(begin, max(counted)), (end, -max(counted))]
    return sorted(steps)


def _profile(tasks: list[Task], steps: list[tuple[float, int]]) -> tuple[np.ndarray, ...]:
    """Instants, and between consecutive instants the running tasks and the threads."""
    changes: list[tuple[float, int, int]] = [(t, 0, d) for t, d in steps]
    changes += [(t.start, 1, 0) for t in tasks] + [(t.stop, -1, 0) for t in tasks]
    changes.sort()
    times = np.array([c[0] for c in changes])
    running = np.cumsum([c[1] for c in changes])
    threads = np.cumsum([c[2] for c in changes])
    return times, running[:-1], threads[:-1]


def _integral(times: np.ndarray, values: np.ndarray, begin: float, end: float) -> float:
    """∫ values dt over ``[begin, end]``, values constant between consecutive ``times``."""
    if end <= begin or times.size < 2:
        return 0.0
    left = np.clip(times[:-1], begin, end)
    right = np.clip(times[1:], begin, end)
    return float(np.sum(values * (right - left)))


def compute(inputs: MetricsInputs, out: Metrics) -> None:
    """Put the wall split, the idle thread-seconds, the bounds and the tail's chunks."""
    tasks, source = tasks_of(inputs)
    steps = thread_steps(inputs)
    if not tasks or not steps:
        reason = source if not tasks else "no worker reported its thread count in the window"
        for key in KEYS:
            out.missing(key, reason)
        return
    times, running, threads = _profile(tasks, steps)
    first = min(t.start for t in tasks)
    last = max(t.stop for t in tasks)
    full = np.flatnonzero((running >= threads) & (threads > 0) & (times[1:] > times[:-1]))
    tail_start = float(times[full[-1] + 1]) if full.size else first
    tail_start = min(max(tail_start, first), last)
    bounds = (inputs.t_start, min(first, inputs.t_end), tail_start, last, inputs.t_end)
    split: dict[str, dict[str, float]] = {}
    for stage, (begin, end) in zip(STAGES, itertools.pairwise(bounds), strict=True):
        end = max(end, begin)
        capacity = _integral(times, threads, begin, end)
        busy = _integral(times, running, begin, end)
        split[stage] = {
            "start": begin,
            "end": end,
            "seconds": end - begin,
            "thread_seconds": capacity,
            "idle_thread_seconds": max(capacity - busy, 0.0),
        }
    out.put("wall_split", split)
    out.put("wall_split_source", source)
    out.put("idle_thread_seconds", math.fsum(s["idle_thread_seconds"] for s in split.values()))
    out.put("processing_seconds", last - first)
    work = math.fsum(t.seconds for t in tasks)
    mean_threads = _integral(times, threads, first, last) / (last - first) if last > first else 0
    if mean_threads > 0:
        out.put("packing_bound_seconds", work / mean_threads)
    else:
        out.missing("packing_bound_seconds", "no thread was live while the tasks ran")
    out.put("longest_chunk_seconds", max(t.seconds for t in tasks))
    _put_tail(tasks, tail_start, out)


def _put_tail(tasks: list[Task], tail_start: float, out: Metrics) -> None:
    """The tasks running in the tail, each against the median, and the tail's cause."""
    median = statistics.median(t.seconds for t in tasks)
    phase_medians = _phase_medians(tasks)
    in_tail = sorted((t for t in tasks if t.stop > tail_start), key=lambda t: -t.seconds)
    out.put(
        "tail_chunks",
        [
            {
                "task_key": t.key,
                "dataset": t.dataset,
                "file": t.file,
                "worker": t.worker,
                "seconds": t.seconds,
                "tail_seconds": t.stop - max(t.start, tail_start),
                "vs_median": t.seconds / median if median > 0 else None,
                **_cause(t, phase_medians),
            }
            for t in in_tail
        ],
    )
    cause = tail_cause(tasks, in_tail, median, phase_medians)
    if cause is None:
        out.missing("tail_cause", "the tail holds no chunk at least 2x the median")
    else:
        out.put("tail_cause", cause)


def _phase_medians(tasks: list[Task]) -> dict[str, float]:
    seconds: dict[str, list[float]] = {}
    for task in tasks:
        for phase, value in (task.wall or {}).items():
            seconds.setdefault(phase, []).append(value)
    return {p: statistics.median(v) for p, v in seconds.items()}


def _cause(task: Task, medians: dict[str, float]) -> dict[str, Any]:
    """The phase holding most of the task's time above its median, and by how much."""
    if not task.wall:
        return {"cause": None, "cause_vs_median": None}
    excess = {p: s - medians.get(p, 0.0) for p, s in task.wall.items()}
    phase = max(excess, key=lambda p: excess[p])
    median = medians.get(phase, 0.0)
    return {
        "cause": phase,
        "cause_vs_median": task.wall[phase] / median if median > 0 else None,
    }


def tail_cause(
    tasks: list[Task], in_tail: list[Task], median: float, phase_medians: dict[str, float]
) -> dict[str, Any] | None:
    """What made the tail's slow chunks slow: one dataset, one file, one worker, or the
    chunks' size.

    A dataset of several files (a file, a worker) is the cause when every slow chunk of
    the tail is its, and its chunks' median duration is at least :data:`SLOW` times the
    others'; the first that holds, so that a dataset slow on every file is named rather
    than the file of its last chunk. With slow chunks on several, the chunks themselves
    are. ``dataset`` names the slow chunks' dataset when they share one.
    """
    slow = [t for t in in_tail if median > 0 and t.seconds >= SLOW * median]
    if not slow:
        return None
    phases = Counter(_cause(t, phase_medians)["cause"] for t in slow)
    phase = phases.most_common(1)[0][0]
    datasets = {t.dataset for t in slow}
    dataset = next(iter(datasets)) if len(datasets) == 1 else None
    for kind in ("dataset", "file", "worker"):
        names = {getattr(t, kind) for t in slow}
        if len(names) != 1 or None in names:
            continue
        (name,) = names
        own = [t for t in tasks if getattr(t, kind) == name]
        if kind == "dataset" and len({t.file for t in own}) < 2:
            continue  # a dataset of one file: that file is named
        others = [t.seconds for t in tasks if getattr(t, kind) != name]
        ratio = (
            statistics.median(t.seconds for t in own) / statistics.median(others)
            if others
            else None
        )
        if ratio is not None and ratio >= SLOW:
            return {
                "kind": kind,
                "name": name,
                "vs_others": ratio,
                "phase": phase,
                "dataset": dataset,
            }
    longest = max(t.seconds for t in slow)
    return {
        "kind": "chunks",
        "name": None,
        "vs_others": longest / median,
        "phase": phase,
        "dataset": dataset,
    }
