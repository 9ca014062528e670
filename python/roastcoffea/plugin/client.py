"""Client-side calls to a running :class:`RoastPlugin`.

Each function is one RPC to the scheduler's ``roastcoffea_*`` handlers; they
need a synchronous ``distributed.Client``.
"""

from __future__ import annotations

import warnings
from typing import Any

from roastcoffea import _native
from roastcoffea.plugin.scheduler import (
    DEFAULT_FLUSH_TIMEOUT,
    FLUSH_HANDLER,
    SNAPSHOT_HANDLER,
    STOP_HANDLER,
)

_NOT_REGISTERED = (
    "the roastcoffea plugin is not registered on this cluster's scheduler "
    "(handler {handler!r} missing); register it first with "
    "`client.register_plugin(roastcoffea.RoastPlugin())`"
)


def _call(client: Any, handler: str, **kwargs: Any) -> Any:
    """Call a scheduler handler; a missing handler answers None."""
    if getattr(client, "asynchronous", False):
        raise TypeError("roastcoffea.plugin helpers need a synchronous Client")
    reply = client.sync(getattr(client.scheduler, handler), **kwargs)
    if reply is None:
        raise RuntimeError(_NOT_REGISTERED.format(handler=handler))
    return reply


def flush(
    client: Any, timeout: float = DEFAULT_FLUSH_TIMEOUT, since: float | None = None
) -> dict[str, Any]:
    """Apply every worker's full state on the scheduler now.

    After a flush the plugin holds every digest of every task whose result the
    client already has, without waiting for a heartbeat.

    Parameters
    ----------
    client : distributed.Client
    timeout : float, default 10.0
        Seconds the scheduler waits for each worker.
    since : float, optional
        Also list the workers that left the cluster since this time
        (scheduler clock).

    Returns
    -------
    dict
        ``{"workers": number flushed, "errors": {address: message},
        "unmonitored": {address: reason}, "departures": [...]}``: workers
        that could not load roastcoffea compute unmonitored and are not
        waited for; each departure is ``{address, name, removed, kind
        ("lost" or "retired"), stimulus_id, restarted_as, restarted_at}``.

    Raises
    ------
    RuntimeError
        When the plugin is not registered.
    """
    return _call(
        client, FLUSH_HANDLER, timeout=float(timeout), since=None if since is None else float(since)
    )


def snapshot(
    client: Any,
    span_id: str | None = None,
    flush: bool = True,
    t_from: float = 0.0,
    t_to: float = 0.0,
) -> dict[str, Any]:
    """Fetch the plugin's aggregates as a Python dict.

    Parameters
    ----------
    client : distributed.Client
    span_id : str, optional
        Keep only task and digest rows of this Dask span and its descendants
        (as yielded by ``distributed.span(...)``); default: everything.
    flush : bool, default True
        Flush every worker first (see :func:`flush`), so the numbers are final
        for every result the client has.
    t_from, t_to : float
        Keep series points overlapping ``[t_from, t_to]`` (scheduler clock;
        ``t_to=0`` means no upper bound).

    Returns
    -------
    dict
        The snapshot layout of docs/architecture.md.

    Raises
    ------
    RuntimeError
        When the plugin is not registered.

    Warns
    -----
    RuntimeWarning
        When some workers could not be flushed.
    """
    if flush:
        errors = _call(client, FLUSH_HANDLER, timeout=DEFAULT_FLUSH_TIMEOUT)["errors"]
        if errors:
            warnings.warn(
                f"roastcoffea: {len(errors)} worker(s) not flushed, their digests may lag "
                f"by one heartbeat: {errors}",
                RuntimeWarning,
                stacklevel=2,
            )
    data = _call(client, SNAPSHOT_HANDLER, span_id=span_id, t_from=float(t_from), t_to=float(t_to))
    return _native.decode_snapshot(data)


def stop(client: Any) -> dict[str, Any]:
    """Stop the plugin and remove it from the scheduler and every worker.

    Parameters
    ----------
    client : distributed.Client

    Returns
    -------
    dict
        ``{"workers": workers the worker plugin left, "errors": {address: message}}``.

    Raises
    ------
    RuntimeError
        When the plugin is not registered.
    """
    return _call(client, STOP_HANDLER)
