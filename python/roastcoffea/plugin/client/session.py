"""A collector's session with the plugin: one handler call at entry, one at exit.

:class:`~roastcoffea.MetricsCollector` reaches the scheduler through these
functions only. The entry registers :class:`RoastPlugin` (a no-op where one is
registered: the plugin is idempotent) and calls the plugin's
:data:`~roastcoffea.plugin.protocol.OPEN_HANDLER`; the exit calls
:data:`~roastcoffea.plugin.protocol.FINISH_HANDLER`, which samples, flushes every
worker and snapshots the block's span in one round trip (in between, the run's records
stream to the client: :mod:`roastcoffea.plugin.client.stream`)
(:mod:`roastcoffea.plugin.scheduler.handlers`). Both are handlers called by name:
nothing pickled travels to the scheduler but the plugin's settings.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from roastcoffea.plugin.client.calls import call_handler
from roastcoffea.plugin.protocol import FINISH_HANDLER, OPEN_HANDLER, FinishReply, OpenReply
from roastcoffea.plugin.scheduler.plugin import RoastPlugin

T = TypeVar("T")


def open_session(client: Any, interval: float) -> OpenReply:
    """Make sure a RoastPlugin runs, and sample once.

    Parameters
    ----------
    client : distributed.Client
    interval : float
        Sampler interval of a plugin registered here (a running one keeps its own).

    Returns
    -------
    OpenReply
        The running plugin's settings and the scheduler's clock.

    Raises
    ------
    RuntimeError
        When the plugin was registered but does not run.
    """
    client.register_plugin(RoastPlugin(interval))
    reply: OpenReply | None = call_handler(client, OPEN_HANDLER)
    if reply is None:
        raise RuntimeError("RoastPlugin registered but not running on the scheduler")
    return reply


class ExitDeadline:
    """The time a collector's exit may spend waiting for the scheduler, shared by its calls.

    The probe may take ``probe`` seconds; the probe and the flush together
    ``probe + flush``. However the scheduler fails (gone before the exit, killed
    during the flush, a connection that hangs), the exit's calls return within
    that time: each runs in a thread of its own, and a call that has not answered
    is left behind (it ends when Dask's own timeout ends it).

    Parameters
    ----------
    probe : float
        Seconds the first call, which only checks that the scheduler answers, may take.
    flush : float
        Seconds the flush waits for each worker.
    """

    def __init__(self, probe: float, flush: float) -> None:
        self.probe = probe
        self.flush = flush
        self.total = probe + flush
        self._end = time.monotonic() + self.total

    def remaining(self) -> float:
        """Seconds left, at least 0."""
        return max(self._end - time.monotonic(), 0.0)


class NoAnswer(RuntimeError):
    """The scheduler did not answer an exit's call in time."""


def _call_within(seconds: float, what: str, call: Callable[[], T]) -> T:
    """``call()`` in a thread of its own; its result, or its exception, within ``seconds``.

    Raises
    ------
    NoAnswer
        When ``call`` has not returned in time (it is left running).
    """
    outcome: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as exc:  # handed to the caller as is
            outcome.append((False, exc))

    thread = threading.Thread(target=run, name="roastcoffea-exit", daemon=True)
    thread.start()
    thread.join(seconds)
    if not outcome:
        raise NoAnswer(
            f"the scheduler did not answer {what} within {seconds:.3g} s (is it gone?): "
            "no snapshot of the block"
        )
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


def check_reachable(client: Any, deadline: ExitDeadline) -> None:
    """Raise, saying why, when the scheduler cannot answer the exit's calls.

    A closed client has no scheduler connection at all; a scheduler that is
    gone would hold each call for Dask's connect timeout (30 s by default), so
    one cheap call first (Dask's own ``identity``, without its worker table) must
    answer within ``deadline.probe`` seconds.
    """
    status = getattr(client, "status", None)
    if status in ("closing", "closed"):
        raise RuntimeError("the client is closed: no snapshot of the block")
    if status != "running":
        raise RuntimeError(f"the client is not connected to the scheduler (status {status!r})")

    def probe() -> None:
        with contextlib.suppress(Exception):  # an error is an answer too
            client.sync(client.scheduler.identity, n_workers=0)

    _call_within(min(deadline.probe, deadline.remaining()), "the exit's first call", probe)


def finish_session(
    client: Any,
    span_id: str,
    tag: str,
    window: tuple[float, float],
    deadline: ExitDeadline,
    wall_time: float | None = None,
    acked: int = 0,
) -> FinishReply:
    """Sample, flush every worker and snapshot the span, in one scheduler call.

    The scheduler then drops the records of the span, which the snapshot
    carries, unless a span tagged ``tag`` encloses it (another collector's
    block, which takes them at its own exit): a long-lived cluster does not
    carry earlier runs' records into later exits.

    Parameters
    ----------
    client : distributed.Client
    span_id : str
        The block's span.
    tag : str
        The tag of collectors' spans.
    window : (float, float)
        The block's window (scheduler clock); its end is widened to the last
        sample.
    deadline : ExitDeadline
        The exit's time: the flush waits ``deadline.flush`` seconds for each
        worker, and the call returns within what is left of the deadline.
    wall_time : float, optional
        The block's seconds, for the run's row on the dashboard page.
    acked : int, default 0
        The newest record number the run's stream received
        (:class:`~roastcoffea.plugin.client.stream.RecordStream`): the snapshot carries
        the records after it.

    Returns
    -------
    FinishReply
        The window's end, the flush's answer (see :func:`roastcoffea.plugin.flush`),
        its seconds and the snapshot's bytes.

    Raises
    ------
    RuntimeError
        When no RoastPlugin runs on the scheduler, or the scheduler did not
        answer in time or failed (the message says which).
    """
    check_reachable(client, deadline)
    t_from, t_to = window

    def finish() -> FinishReply | None:
        return call_handler(
            client,
            FINISH_HANDLER,
            span_id=span_id,
            t_from=float(t_from),
            t_to=float(t_to),
            timeout=deadline.flush,
            tag=tag,
            wall_time=wall_time,
            acked=acked,
        )

    try:
        reply = _call_within(deadline.remaining(), "the exit's flush and snapshot", finish)
    except NoAnswer:
        raise
    except Exception as exc:
        raise RuntimeError(
            f"the exit's flush and snapshot failed ({type(exc).__name__}: {exc}): "
            "no snapshot of the block"
        ) from exc
    if reply is None:
        raise RuntimeError("no running RoastPlugin on the scheduler (stopped during the block?)")
    return reply
