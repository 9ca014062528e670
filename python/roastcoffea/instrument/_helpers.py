"""A measured task's work on uproot's executors, measured on the helper threads.

uproot's TBranch reader (``_ranges_or_baskets_to_arrays``) hands each basket's
decompression to its ``decompression_executor`` and each basket's interpretation
to its ``interpretation_executor``, and waits in its queue for what they produce.
By default both run in the calling thread; given thread pools (options of
``NanoEventsFactory.from_root`` and of uproot's ``array``/``arrays``), they run
on the pools' threads, where no task clock is.

While a measured task reads with pools, its submissions go through
:class:`HelperRuns`: each call runs on its helper thread under a clock of its own,
based at ``interpret`` (the phase the same call has on the task's thread, inside
``TBranch.array``), its codecs ``decompress``, the thread's CPU clock read at
every switch so its CPU per phase is exact. When the call ends, that clock is
added to the task's (:meth:`~roastcoffea._native.TaskPhases.add_helper`): its
phases beside the task's own, its bytes, codecs and baskets with the task's. The
reader returns only when every call it submitted has been added, so a task's
clock holds all its helpers' work when it closes.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from roastcoffea._native import TaskPhases, current_task, set_current_task
from roastcoffea.instrument._counters import COUNTERS

_current = current_task


class HelperRuns:
    """The calls one reader of a measured task submitted to executors, until all are added."""

    def __init__(self, task: TaskPhases) -> None:
        self._task = task
        self._pending = 0
        self._changed = threading.Condition(threading.Lock())

    def executor(self, executor: Any) -> _MeasuredExecutor:
        """``executor``, its submissions measured on the thread that runs them."""
        return _MeasuredExecutor(executor, self)

    def submit(self, executor: Any, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        with self._changed:
            self._pending += 1
        try:
            return executor.submit(self._run, fn, args, kwargs)
        except BaseException:
            self._finished()
            raise

    def _run(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """``fn`` on the thread the executor chose, under a helper clock added to the task."""
        if _current() is not None:  # an executor that runs it in a measuring thread
            try:
                return fn(*args, **kwargs)
            finally:
                self._finished()
        helper = TaskPhases(cpu_interval=0.0, base="interpret")
        set_current_task(helper)
        try:
            return fn(*args, **kwargs)
        finally:
            set_current_task(None)
            try:
                helper.close()
                self._task.add_helper(helper)
            except Exception as exc:  # never let the measurement break the reader
                COUNTERS.add("instrument_errors", exc)
            self._finished()

    def _finished(self) -> None:
        with self._changed:
            self._pending -= 1
            if not self._pending:
                self._changed.notify_all()

    def wait(self) -> None:
        """Until every submitted call has run and been added to the task."""
        with self._changed:
            self._changed.wait_for(lambda: not self._pending)


class _MeasuredExecutor:
    """An executor whose ``submit`` goes through :class:`HelperRuns` (uproot calls only it)."""

    __slots__ = ("_executor", "_runs")

    def __init__(self, executor: Any, runs: HelperRuns) -> None:
        self._executor, self._runs = executor, runs

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        return self._runs.submit(self._executor, fn, args, kwargs)


def reader(func: Callable[..., Any]) -> Callable[..., Any]:
    """uproot's ``_ranges_or_baskets_to_arrays``, its executors measured when they are pools."""
    from uproot.source.futures import TrivialExecutor

    @functools.wraps(func)
    def ranges_or_baskets_to_arrays(
        hasbranches: Any,
        ranges_or_baskets: Any,
        branchid_interpretation: Any,
        entry_start: Any,
        entry_stop: Any,
        decompression_executor: Any,
        interpretation_executor: Any,
        *rest: Any,
    ) -> Any:
        task, runs = _current(), None
        if task is not None and not (
            isinstance(decompression_executor, TrivialExecutor)
            and isinstance(interpretation_executor, TrivialExecutor)
        ):
            runs = HelperRuns(task)
            decompression_executor = runs.executor(decompression_executor)
            interpretation_executor = runs.executor(interpretation_executor)
        try:
            return func(
                hasbranches,
                ranges_or_baskets,
                branchid_interpretation,
                entry_start,
                entry_stop,
                decompression_executor,
                interpretation_executor,
                *rest,
            )
        finally:
            if runs is not None:
                runs.wait()

    return ranges_or_baskets_to_arrays
