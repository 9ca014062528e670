"""Where a processor task's time goes: a per-thread clock that charges every instant to one phase.

A coffea work item runs in one worker thread. The hooks of
:mod:`roastcoffea.instrument._phase_hooks` tell the clock when the thread
enters and leaves a phase (opening the file, waiting for bytes, decompressing,
building arrays, compressing the output); the clock charges the wall and CPU
time between two such moments to the phase on top of its stack. Nested phases
are therefore exclusive: a basket decompressed while building an array counts
as ``decompress``, not twice. Charging is by construction complete: the phases
of a task add up to the time the clock ran.

The clock lives in a thread-local while one task runs. Nothing here knows
Dask: the worker plugin gives :func:`set_sink` the function that receives a
task's finished clock, closes the sum against Dask's own task start and digests
the phases as fine performance metrics.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from time import perf_counter, thread_time
from typing import Any

from roastcoffea.instrument._counters import COUNTERS

#: The phases, in display order; ``other`` closes the sum.
PHASES = ("open", "read", "decompress", "interpret", "user", "output", "other")

# How the phases appear in Dask's fine performance metrics: the worker plugin
# digests them under these activities and units, the metrics read them back.
#: Activity label of a phase, and of a codec's share of ``decompress``.
PHASE_ACTIVITY, CODEC_ACTIVITY = "phase:{}", "decompress:{}"
#: Activities counting the measured tasks, those whose output was measured, and the
#: clock's own cost (its switches, and their estimated seconds).
TASKS_ACTIVITY, OUTPUTS_ACTIVITY, CLOCK_ACTIVITY = "phase-tasks", "phase-outputs", "phase-clock"
#: Units (never Dask's "seconds": those are subtracted from the task's thread time).
WALL, CPU, BYTES, COMPRESSED, COUNT = (
    "wall-seconds",
    "cpu-seconds",
    "bytes",
    "compressed-bytes",
    "count",
)


def is_phase_activity(activity: str) -> bool:
    """Whether a digest activity is the phase clock's (it has its own views), not Dask's."""
    return activity.startswith(("phase:", "phase-", "decompress:"))


class TaskPhases:
    """One task's phase clock: wall and CPU seconds per phase, bytes, codecs.

    Attributes
    ----------
    wall, cpu : dict of str to float
        Seconds charged to each phase (wall: ``perf_counter``; CPU: the
        thread's ``thread_time``).
    read_bytes : int
        Compressed bytes the task waited for (first wait of each uproot chunk).
    codecs : dict of str to list
        Per codec name: ``[wall, cpu, compressed bytes in, bytes out]``.
    item : object
        The coffea ``WorkItem`` of the task, when the work function saw one.
    output_measured : bool
        Whether the output was compressed inside the task (coffea's
        ``compression`` on); otherwise Dask serialises it after the task.
    opaque : int
        Depth of opaque phases running: while above 0, hooked calls charge
        nothing of their own.
    switches : int
        Phase switches: hooked calls that read the clocks on entry and exit.
    nested : int
        Hooked calls inside a call of the same phase: they charge nothing
        of their own (the time goes to that phase either way) and read no clock.
    passed : int
        Hooked calls that only pass the call on: inside an opaque phase, or
        at no phase boundary (an uproot chunk already in memory, a column
        lookup).
    """

    __slots__ = (
        "_c",
        "_stack",
        "_t",
        "codecs",
        "cpu",
        "in_work",
        "item",
        "nested",
        "opaque",
        "output_measured",
        "passed",
        "read_bytes",
        "started",
        "switches",
        "wall",
    )

    def __init__(self) -> None:
        self.wall = dict.fromkeys(PHASES, 0.0)
        self.cpu = dict.fromkeys(PHASES, 0.0)
        self.read_bytes = 0
        self.codecs: dict[str, list[float]] = {}
        self.item: Any = None
        self.output_measured = False
        self.in_work = False
        self.switches = 0
        self.nested = 0
        self.passed = 0
        self.opaque = 0
        self._stack = ["other"]
        self._t = self.started = perf_counter()
        self._c = thread_time()

    def _charge(self) -> tuple[float, float]:
        """Charge the time since the last switch to the top phase; returns its (wall, cpu)."""
        return self._charge_as(self._stack[-1])

    def _charge_as(self, phase: str) -> tuple[float, float]:
        t, c = perf_counter(), thread_time()
        dw, dc = t - self._t, c - self._c
        self.wall[phase] += dw
        self.cpu[phase] += dc
        self._t, self._c = t, c
        return dw, dc

    def enter(self, phase: str, opaque: bool = False) -> None:
        """Start charging ``phase`` (until the matching :meth:`leave`)."""
        stack = self._stack
        if phase == stack[-1] and not opaque:
            self.nested += 1
        else:
            self._charge()
            self.switches += 1
        stack.append(phase)
        self.opaque += opaque

    def leave(self, opaque: bool = False) -> tuple[float, float]:
        """Stop charging the top phase; returns the (wall, cpu) of its last stretch
        (zero for a call nested in its own phase)."""
        stack = self._stack
        phase = stack.pop()
        self.opaque -= opaque
        if phase == stack[-1] and not opaque:
            return 0.0, 0.0
        return self._charge_as(phase)

    def rebase(self, phase: str) -> None:
        """Charge time outside every hooked call to ``phase`` from now on."""
        self._charge()
        self._stack[0] = phase

    def add_codec(self, name: str, wall: float, cpu: float, size_in: int, size_out: int) -> None:
        stats = self.codecs.get(name)
        if stats is None:
            stats = self.codecs[name] = [0.0, 0.0, 0, 0]
        stats[0] += wall
        stats[1] += cpu
        stats[2] += size_in
        stats[3] += size_out

    def clock_seconds(self) -> float:
        """The clock's own cost in this task: its hooked calls times their timed costs."""
        switch, nested, passed = _call_seconds
        return self.switches * switch + self.nested * nested + self.passed * passed

    def close(self) -> float:
        """Charge the last stretch; returns the wall seconds the clock ran."""
        self._charge()
        return self._t - self.started


class _ThreadTask(threading.local):
    task: TaskPhases | None = None


#: The clock of the task each thread runs (``THREAD.task``, None when none is measured).
THREAD = _ThreadTask()

#: Seconds a hooked call adds when it switches phase, when it is nested in its own
#: phase, and when it passes inside an opaque phase; set by the hooks' calibration.
_call_seconds = (0.0, 0.0, 0.0)


def set_call_costs(switch: float, nested: float, passed: float) -> None:
    """Set what each kind of hooked call costs, for :meth:`TaskPhases.clock_seconds`."""
    global _call_seconds
    _call_seconds = (switch, nested, passed)


def call_costs() -> tuple[float, float, float]:
    """The (switch, nested, passed) seconds of a hooked call; zeros before calibration."""
    return _call_seconds


#: Receives each finished task clock (set by the worker plugin); None: nobody listens.
_sink: Callable[[TaskPhases], None] | None = None


def set_sink(sink: Callable[[TaskPhases], None] | None) -> None:
    """Send every finished task's clock to ``sink`` (None stops measuring new tasks)."""
    global _sink
    _sink = sink


def current() -> TaskPhases | None:
    """The clock of the task this thread runs, or None."""
    return THREAD.task


def run_task(func: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """Call ``func`` as a measured task, unless this thread already measures one.

    The outermost call owns the clock: it hands it to the sink when ``func``
    returns or raises. Never lets a failure of the measurement reach ``func``'s
    caller.
    """
    if _sink is None or current() is not None:
        return func(*args, **kwargs)
    task = THREAD.task = TaskPhases()
    try:
        return func(*args, **kwargs)
    finally:
        THREAD.task = None
        try:
            task.close()
            sink = _sink
            if sink is not None:
                sink(task)
        except Exception as exc:  # never let the measurement break the task
            COUNTERS.add("instrument_errors", exc)


@contextmanager
def own_work() -> Iterator[None]:
    """Charge the instrumentation's own work to ``other``, its reads included.

    ``@track_metrics`` runs inside ``process()``; without this its RSS reads
    and TKey header reads would count as the user's time and the task's reads.
    """
    task = current()
    if task is None:
        yield
        return
    task.enter("other", True)
    try:
        yield
    finally:
        task.leave(True)
