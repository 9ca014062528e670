"""Where a processor task's time goes: a per-thread clock that charges every instant to one phase.

A coffea work item runs in one worker thread. The hooks of
:mod:`roastcoffea.instrument._phase_hooks` tell the clock when the thread
enters and leaves a phase (opening the file, waiting for bytes, decompressing,
building arrays, compressing the output); the clock charges the wall and CPU
time between two such moments to the phase on top of its stack. Nested phases
are therefore exclusive: a basket decompressed while building an array counts
as ``decompress``, not twice. Charging is by construction complete: the phases
of a task add up to the time the clock ran.

The clock is native (``plugin/worker/phaseclock.c``, its arithmetic in
``native/src/phases.c``): the hooks run hundreds of times per chunk, and a
hooked call that only charges its time to a phase costs no Python frame. It is
the calling thread's (:func:`current`) while one task runs. Nothing here knows
Dask: the worker plugin gives :func:`set_sink` the function that receives a
task's finished clock, closes the sum against Dask's own task start and digests
the phases as fine performance metrics.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from roastcoffea._native import Around, TaskPhases, current_task, set_current_task
from roastcoffea.instrument._counters import COUNTERS

F = TypeVar("F", bound=Callable[..., Any])

#: One task's phase clock (native): wall and CPU seconds per phase, bytes, codecs.
#: Its counters say how often the hooks ran: ``switches`` read the clocks on entry
#: and exit, ``nested`` calls inside a call of the same phase read none (their
#: time goes to that phase either way), ``passed`` calls only passed the call on
#: (inside an opaque phase, or at no phase boundary); ``errors`` counts the clock's
#: own failures (calls nested past the stack it keeps, 65,536 deep, or with no memory
#: to grow it: their time goes to the phase under them; uproot chunks or baskets whose
#: attributes the hooks could not read). ``baskets`` lists the uproot
#: baskets the task parsed, with the sizes of their TKeys (the chunk's byte accounting
#: takes them from there instead of reading the headers again).
TaskPhases = TaskPhases

#: Seconds a hooked call adds when it switches phase (the CPU clock left unread), when
#: it is nested in its own phase and when it passes inside an opaque phase, and one read
#: of the thread's CPU clock; set by the hooks' calibration (None before it).
_call_seconds: tuple[float, float, float, float] | None = None


def set_call_costs(switch: float, nested: float, passed: float, cpu_read: float) -> None:
    """Set what each kind of hooked call and a CPU clock read cost, for :func:`clock_seconds`."""
    global _call_seconds
    _call_seconds = (switch, nested, passed, cpu_read)


def call_costs() -> tuple[float, float, float, float] | None:
    """The (switch, nested, passed, cpu_read) seconds; None before calibration."""
    return _call_seconds


#: Seconds between a task clock's CPU clock reads, unless the sink's owner says otherwise.
CPU_INTERVAL: float = TaskPhases().cpu_interval

#: Receives each finished task clock (set by the worker plugin); None: nobody listens.
_sink: Callable[[TaskPhases], None] | None = None
_cpu_interval = CPU_INTERVAL


def set_sink(
    sink: Callable[[TaskPhases], None] | None, *, cpu_interval: float = CPU_INTERVAL
) -> None:
    """Send every finished task's clock to ``sink`` (None stops measuring new tasks).

    New task clocks read the thread's CPU clock at most every ``cpu_interval``
    seconds (:class:`TaskPhases`); ValueError for a negative one.
    """
    global _sink, _cpu_interval
    if not cpu_interval >= 0.0:
        raise ValueError(f"cpu_interval must be a number >= 0, got {cpu_interval!r}")
    _sink, _cpu_interval = sink, cpu_interval


#: The clock of the task this thread runs, or None.
current: Callable[[], TaskPhases | None] = current_task


def clock_seconds(task: TaskPhases) -> float:
    """The clock's own cost in ``task``: its hooked calls and CPU clock reads times their
    timed costs (zero before the hooks' calibration: no hook has run)."""
    if _call_seconds is None:
        return 0.0
    switch, nested, passed, cpu_read = _call_seconds
    return (
        task.switches * switch
        + task.nested * nested
        + task.passed * passed
        + task.cpu_reads * cpu_read
    )


def run_task(func: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """Call ``func`` as a measured task, unless this thread already measures one.

    The outermost call owns the clock: it hands it to the sink when ``func``
    returns or raises. Never lets a failure of the measurement reach ``func``'s
    caller. The hooks wrap the task the same way, with :func:`enter_task` and
    :func:`leave_task` in an ``Around``: no frame of theirs on the task's stack.
    """
    return Around(func, enter_task, leave_task)(*args, **kwargs)


def track_phases(func: F) -> F:
    """Measure every call of ``func`` with the phase clock, as coffea's Runner tasks are.

    Parameters
    ----------
    func : callable
        A function run as a Dask task that reads with coffea or uproot outside coffea's
        ``Runner``: e.g. one chunk through ``NanoEventsFactory.from_root`` with
        uproot's ``decompression_executor`` / ``interpretation_executor`` pools, which
        ``Runner`` does not pass on.

    Returns
    -------
    callable
        ``func``, unchanged in what it returns or raises.

    Notes
    -----
    On a worker with the roastcoffea plugin each call's phases become the task's fine
    metrics and ``kind="phases"`` record, as a Runner task's do: ``user`` from the return
    of ``events()`` on, ``other`` what precedes the first hooked call, and the work
    uproot's executor pools did on helper threads beside them; the record's dataset, file
    and entry range are those of the events' metadata. A call inside a measured
    task, or with nobody listening (no plugin), is only passed on.
    """
    tracked = Around(func, _enter_work_task, leave_task)
    functools.update_wrapper(tracked, func)
    return tracked  # type: ignore[return-value]


def _enter_work_task(*args: Any, **kwargs: Any) -> TaskPhases | None:
    """:func:`enter_task` for a task that is its own work function: ``events()`` starts
    the user's code in it."""
    task = enter_task()
    if task is not None:
        task.in_work = True
    return task


def enter_task(*args: Any, **kwargs: Any) -> TaskPhases | None:
    """Start a clock as this thread's task and return it; None when there is no sink or the
    thread already measures a task (the outer call owns the clock). The arguments, those of
    the task's call, are ignored."""
    if _sink is None or current() is not None:
        return None
    task = TaskPhases(cpu_interval=_cpu_interval)
    set_current_task(task)
    return task


def leave_task(task: TaskPhases, error: BaseException | None) -> None:
    """End ``task`` (from :func:`enter_task`) and hand it to the sink; never raises.

    ``error``, what the task raised, changes nothing: its clock is handed on either way.
    """
    set_current_task(None)
    try:
        task.close()
        if task.errors:
            COUNTERS.add("instrument_errors", RuntimeError(f"phase clock: {task.errors} errors"))
        sink = _sink
        if sink is not None:
            sink(task)
    except Exception as exc:  # never let the measurement break the task
        COUNTERS.add("instrument_errors", exc)
