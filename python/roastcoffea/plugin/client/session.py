"""A collector's session with the plugin: one scheduler round trip at entry and at exit.

:class:`~roastcoffea.MetricsCollector` calls these functions and nothing else
of the scheduler. Each runs a function on the scheduler (``run_on_scheduler``)
so that sampling, flushing and the snapshot happen in one round trip; when the
scheduler refuses pickled calls (``distributed.scheduler.pickle: False``) the
exit falls back to the plugin's public RPC handlers.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

from distributed.metrics import time as dask_time

from roastcoffea.plugin.client.calls import flush
from roastcoffea.plugin.protocol import FLUSH_HANDLER, PLUGIN_NAME, SNAPSHOT_HANDLER
from roastcoffea.plugin.scheduler.plugin import RoastPlugin

#: Padding of a block's window: the series store times in milliseconds, so a
#: sample taken at the window's edge may be stored up to a millisecond outside.
WINDOW_PAD = 1e-3


def _running_plugin(dask_scheduler: Any) -> Any:
    plugin = dask_scheduler.plugins.get(PLUGIN_NAME)
    return plugin if getattr(plugin, "sampler", None) is not None else None


def _scheduler_tick(dask_scheduler: Any) -> dict[str, Any] | None:
    """Run on the scheduler: one sampler pass now; the plugin's settings and clock."""
    plugin = _running_plugin(dask_scheduler)
    if plugin is None:
        return None
    plugin.tick()
    phases = getattr(plugin, "phases", True)  # a plugin pickled before the setting existed
    return {"interval": plugin.interval, "live": plugin.live, "phases": phases, "time": dask_time()}


def _scheduler_clock(dask_scheduler: Any) -> float:
    """Run on the scheduler: its clock (the exit's check that it answers)."""
    return dask_time()


async def _scheduler_finish(
    dask_scheduler: Any, span_id: str, t_from: float, t_to: float, timeout: float, tag: str
) -> dict[str, Any] | None:
    """Run on the scheduler at a collector's exit: sample, flush, snapshot, release."""
    tick = _scheduler_tick(dask_scheduler)
    if tick is None:
        return None
    start = dask_time()
    flushed = await dask_scheduler.handlers[FLUSH_HANDLER](timeout=timeout, since=t_from)
    flush_seconds = dask_time() - start
    t_to = max(t_to, tick["time"]) + WINDOW_PAD
    data = dask_scheduler.handlers[SNAPSHOT_HANDLER](
        span_id=span_id, t_from=t_from, t_to=t_to, release_unless_inside=tag
    )
    return {
        "t_to": t_to,
        "flush": flushed,
        "flush_seconds": flush_seconds,
        "snapshot": data,
    }


def open_session(client: Any, interval: float, notes: list[str]) -> dict[str, Any] | None:
    """Make sure a RoastPlugin runs, and sample once.

    Parameters
    ----------
    client : distributed.Client
    interval : float
        Sampler interval for a plugin registered here.
    notes : list of str
        Receives what the caller should know (e.g. the scheduler refused the
        inspection, so a plugin was registered blindly).

    Returns
    -------
    dict or None
        ``{"interval", "live", "time"}`` of the running plugin (scheduler
        clock), or None when the scheduler could not be inspected.

    Raises
    ------
    RuntimeError
        When the plugin was registered but does not run.
    """
    try:
        info = client.run_on_scheduler(_scheduler_tick)
    except Exception as exc:
        # e.g. distributed.scheduler.pickle disabled: registration still works.
        notes.append(f"could not inspect the scheduler ({type(exc).__name__}: {exc})")
        client.register_plugin(RoastPlugin(interval))
        return None
    if info is None:
        client.register_plugin(RoastPlugin(interval))
        info = client.run_on_scheduler(_scheduler_tick)
    if info is None:
        raise RuntimeError("RoastPlugin registered but not running on the scheduler")
    return info


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


def _call_within(seconds: float, what: str, call: Any) -> Any:
    """``call()`` in a thread of its own; its result, or its exception, within ``seconds``.

    Raises
    ------
    RuntimeError
        When ``call`` has not returned in time (it is left running).
    """
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as exc:  # handed to the caller as is
            outcome.append((False, exc))

    thread = threading.Thread(target=run, name="roastcoffea-exit", daemon=True)
    thread.start()
    thread.join(seconds)
    if not outcome:
        raise RuntimeError(
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
    one cheap call first must answer within ``deadline.probe`` seconds.
    """
    status = getattr(client, "status", None)
    if status in ("closing", "closed"):
        raise RuntimeError("the client is closed: no snapshot of the block")
    if status != "running":
        raise RuntimeError(f"the client is not connected to the scheduler (status {status!r})")

    def probe() -> None:
        # An error is an answer too (e.g. pickled calls refused by the scheduler).
        with contextlib.suppress(Exception):
            client.run_on_scheduler(_scheduler_clock)

    _call_within(min(deadline.probe, deadline.remaining()), "the exit's first call", probe)


def finish_session(
    client: Any,
    span_id: str,
    tag: str,
    window: tuple[float, float],
    deadline: ExitDeadline,
    notes: list[str],
) -> dict[str, Any]:
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
    notes : list of str
        Receives the reason when the exit had to use the public RPCs.

    Returns
    -------
    dict
        ``{"t_to", "flush", "flush_seconds", "snapshot"}``: the window's end,
        the flush's answer (see :func:`roastcoffea.plugin.flush`), its seconds
        and the snapshot's bytes.

    Raises
    ------
    RuntimeError
        When no RoastPlugin runs on the scheduler, or the scheduler did not
        answer in time or failed (the message says which).
    """
    t_from, t_to = window
    timeout = deadline.flush

    def finish() -> Any:
        return client.run_on_scheduler(
            _scheduler_finish,
            span_id=span_id,
            t_from=t_from,
            t_to=t_to,
            timeout=timeout,
            tag=tag,
        )

    def by_rpc() -> dict[str, Any]:
        return _finish_by_rpc(client, span_id, tag, t_from, t_to, timeout)

    try:
        reply = _call_within(deadline.remaining(), "the exit's flush and snapshot", finish)
    except Exception as exc:
        if not _refuses_pickled_calls(exc):
            raise RuntimeError(
                f"the exit's flush and snapshot failed ({type(exc).__name__}: {exc}): "
                "no snapshot of the block"
            ) from exc
        notes.append(f"exit through the public RPCs ({type(exc).__name__}: {exc})")
        reply = _call_within(deadline.remaining(), "the exit's flush and snapshot", by_rpc)
    if reply is None:
        raise RuntimeError("no running RoastPlugin on the scheduler (stopped during the block?)")
    return reply


def _refuses_pickled_calls(exc: BaseException) -> bool:
    """Whether a scheduler refused to run a pickled function (``distributed.scheduler.pickle``
    off, in the Dask versions that had the setting); the public RPCs then still answer."""
    return "pickle" in str(exc)


def _finish_by_rpc(
    client: Any, span_id: str, tag: str, t_from: float, t_to: float, timeout: float
) -> dict[str, Any]:
    start = time.perf_counter()
    flushed = flush(client, timeout=timeout, since=t_from)
    flush_seconds = time.perf_counter() - start
    data = client.sync(
        getattr(client.scheduler, SNAPSHOT_HANDLER),
        span_id=span_id,
        t_from=float(t_from),
        t_to=float(t_to),
        release_unless_inside=tag,
    )
    return {"t_to": t_to, "flush": flushed, "flush_seconds": flush_seconds, "snapshot": data}
