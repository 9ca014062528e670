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

from roastcoffea.plugin._workers import PLUGIN_NAME
from roastcoffea.plugin.client import flush
from roastcoffea.plugin.scheduler import FLUSH_HANDLER, SNAPSHOT_HANDLER, RoastPlugin

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


def _scheduler_open(dask_scheduler: Any) -> dict[str, Any] | None:
    """Run on the scheduler at a collector's entry: free finished task groups, then tick."""
    plugin = _running_plugin(dask_scheduler)
    if plugin is not None:
        plugin.release_finished_groups()
    return _scheduler_tick(dask_scheduler)


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
    """Make sure a RoastPlugin runs; free finished task groups and sample once.

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
        info = client.run_on_scheduler(_scheduler_open)
    except Exception as exc:
        # e.g. distributed.scheduler.pickle disabled: registration still works.
        notes.append(f"could not inspect the scheduler ({type(exc).__name__}: {exc})")
        client.register_plugin(RoastPlugin(interval))
        return None
    if info is None:
        client.register_plugin(RoastPlugin(interval))
        info = client.run_on_scheduler(_scheduler_open)
    if info is None:
        raise RuntimeError("RoastPlugin registered but not running on the scheduler")
    return info


def check_reachable(client: Any, timeout: float) -> None:
    """Raise, saying why, when the scheduler cannot answer the exit's calls.

    A closed client has no scheduler connection at all; a scheduler that is
    gone would hold each call for Dask's connect timeout (30 s by default), so
    one cheap call first must answer within ``timeout`` seconds.
    """
    status = getattr(client, "status", None)
    if status in ("closing", "closed"):
        raise RuntimeError("the client is closed: no snapshot of the block")
    if status != "running":
        raise RuntimeError(f"the client is not connected to the scheduler (status {status!r})")
    answered = threading.Event()

    def probe() -> None:
        # An error is an answer too (e.g. pickled calls refused by the scheduler).
        with contextlib.suppress(Exception):
            client.run_on_scheduler(_scheduler_clock)
        answered.set()

    threading.Thread(target=probe, name="roastcoffea-probe", daemon=True).start()
    if not answered.wait(timeout):
        raise RuntimeError(
            f"the scheduler did not answer within {timeout:g} s (is it gone?): "
            "no snapshot of the block"
        )


def finish_session(
    client: Any,
    span_id: str,
    tag: str,
    window: tuple[float, float],
    timeout: float,
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
    timeout : float
        Seconds the flush waits for each worker.
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
        When no RoastPlugin runs on the scheduler.
    """
    t_from, t_to = window
    try:
        reply = client.run_on_scheduler(
            _scheduler_finish,
            span_id=span_id,
            t_from=t_from,
            t_to=t_to,
            timeout=timeout,
            tag=tag,
        )
    except Exception as exc:  # e.g. distributed.scheduler.pickle disabled
        notes.append(f"exit through the public RPCs ({type(exc).__name__}: {exc})")
        reply = _finish_by_rpc(client, span_id, tag, t_from, t_to, timeout)
    if reply is None:
        raise RuntimeError("no running RoastPlugin on the scheduler (stopped during the block?)")
    return reply


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
