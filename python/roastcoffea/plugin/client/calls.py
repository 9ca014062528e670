"""Client-side calls to a running :class:`RoastPlugin`.

:func:`flush`, :func:`snapshot` and :func:`stop` are each one RPC to the
scheduler's ``roastcoffea_*`` handlers and need a synchronous
``distributed.Client``; a :class:`LiveFeed` receives the deltas the plugin
publishes while a client listens.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from typing import Any, ClassVar

import roastcoffea.config as config
from roastcoffea._native import decode_snapshot
from roastcoffea.plugin.protocol import FLUSH_HANDLER, LIVE_TOPIC, SNAPSHOT_HANDLER, STOP_HANDLER

_NOT_REGISTERED = (
    "the roastcoffea plugin is not registered on this cluster's scheduler "
    "(handler {handler!r} missing); register it first with "
    "`client.register_plugin(roastcoffea.RoastPlugin())`"
)


def call_handler(client: Any, handler: str, **kwargs: Any) -> Any:
    """One RPC to a scheduler handler of the plugin, by name; None when the scheduler has
    no such handler (Dask answers None, and logs that it has none)."""
    if getattr(client, "asynchronous", False):
        raise TypeError("roastcoffea.plugin helpers need a synchronous Client")
    return client.sync(getattr(client.scheduler, handler), **kwargs)


def _call(client: Any, handler: str, **kwargs: Any) -> Any:
    """:func:`call_handler`, a missing handler an error that says what to do."""
    reply = call_handler(client, handler, **kwargs)
    if reply is None:
        raise RuntimeError(_NOT_REGISTERED.format(handler=handler))
    return reply


def flush(client: Any, timeout: float | None = None, since: float | None = None) -> dict[str, Any]:
    """Apply every worker's full state on the scheduler now.

    After a flush the plugin holds every digest of every task whose result the
    client already has, without waiting for a heartbeat.

    Parameters
    ----------
    client : distributed.Client
    timeout : float, optional
        Seconds the scheduler waits for each worker; default the setting
        ``roastcoffea.flush-timeout`` (10 s).
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
    timeout = float(config.seconds("flush-timeout", timeout))
    return _call(
        client, FLUSH_HANDLER, timeout=timeout, since=None if since is None else float(since)
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
        timeout = float(config.seconds("flush-timeout"))
        errors = _call(client, FLUSH_HANDLER, timeout=timeout)["errors"]
        if errors:
            warnings.warn(
                f"roastcoffea: {len(errors)} worker(s) not flushed, their digests may lag "
                f"by one heartbeat: {errors}",
                RuntimeWarning,
                stacklevel=2,
            )
    data = _call(client, SNAPSHOT_HANDLER, span_id=span_id, t_from=float(t_from), t_to=float(t_to))
    return decode_snapshot(data)


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


class LiveFeed:
    """The deltas the plugin publishes while a client listens, for one handler per client.

    A client holds one handler per topic, so one feed at a time may subscribe
    on a client; the others are refused with a reason.

    Parameters
    ----------
    client : distributed.Client
    """

    _lock = threading.Lock()
    _clients: ClassVar[set[int]] = set()

    def __init__(self, client: Any) -> None:
        self.client = client
        self._subscribed = False

    def subscribe(self, handler: Callable[[Any], None]) -> str | None:
        """Call ``handler((timestamp, delta))`` for each delta the plugin publishes.

        Parameters
        ----------
        handler : callable
            Receives each event of the plugin's topic (see
            :mod:`roastcoffea.plugin.scheduler.live` for the delta's keys).

        Returns
        -------
        str or None
            None once subscribed; otherwise why not.
        """
        with self._lock:
            if id(self.client) in self._clients:
                return "another collector's live view is running on this client"
            reason = self._foreign_handler()
            if reason is not None:
                return reason
            self._clients.add(id(self.client))

        def handle(event: Any) -> None:
            handler(event)

        handle._roastcoffea_live = True  # type: ignore[attr-defined]
        try:
            self.client.subscribe_topic(LIVE_TOPIC, handle)
        except Exception:
            self._release()
            raise
        self._subscribed = True
        return None

    def unsubscribe(self) -> None:
        """Stop the deltas :meth:`subscribe` asked for (a feed never subscribed does nothing)."""
        if not self._subscribed:
            return
        self._subscribed = False
        try:
            self.client.unsubscribe_topic(LIVE_TOPIC)
            # distributed's unsubscribe_topic only tells the scheduler; the
            # client would keep the handler and refuse the next subscription.
            handlers = getattr(self.client, "_event_handlers", {})
            if getattr(handlers.get(LIVE_TOPIC), "_roastcoffea_live", False):
                del handlers[LIVE_TOPIC]
        finally:
            self._release()

    def _release(self) -> None:
        with self._lock:
            self._clients.discard(id(self.client))

    def _foreign_handler(self) -> str | None:
        """Why the user's own handler of the topic forbids ours, if it does.

        distributed keeps a client's handler after ``unsubscribe_topic``, and
        the scheduler cannot say whether a subscription is still on its way,
        so any handler that is not ours is left alone.
        """
        existing = getattr(self.client, "_event_handlers", {}).get(LIVE_TOPIC)
        if existing is None or getattr(existing, "_roastcoffea_live", False):
            return None
        return f"the client already has a handler for topic {LIVE_TOPIC!r}"
