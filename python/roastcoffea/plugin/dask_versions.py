"""Feature detection for the Dask APIs whose shape changed across versions.

Everything here looks at the running objects (signatures, attributes) rather
than at version numbers, so a backport or a vendor patch is handled by what it
actually provides.
"""

from __future__ import annotations

import inspect
from typing import Any


async def register_worker_plugin(scheduler: Any, plugin: bytes, name: str) -> dict[str, Any]:
    """Install a pickled worker plugin on every current and future worker, idempotently.

    Parameters
    ----------
    scheduler : distributed.Scheduler
        The scheduler the calling plugin runs in.
    plugin : bytes
        The pickled worker plugin.
    name : str
        The name the workers store it under.

    Returns
    -------
    dict
        ``{worker address: reply}`` as Dask returns it; empty when a plugin of
        that name was already installed.

    Notes
    -----
    Since distributed 2023.12 ``idempotent`` is a keyword, and since 2026.6 it is
    required; before, the method took ``(comm, plugin, name=None)`` only.
    """
    method = scheduler.register_worker_plugin
    kwargs: dict[str, Any] = {"name": name}
    if "idempotent" in inspect.signature(method).parameters:
        kwargs["idempotent"] = True
    return await method(None, plugin, **kwargs)


def topic_subscribers(scheduler: Any, topic: str) -> int | None:
    """Number of clients subscribed to ``topic``, or None when unknowable.

    Parameters
    ----------
    scheduler : distributed.Scheduler
    topic : str

    Returns
    -------
    int or None
        Since distributed 2024.2 subscriptions live in ``scheduler._broker``;
        before, in ``scheduler.event_subscriber``. None when neither exists.
    """
    broker = getattr(scheduler, "_broker", None)
    topics = getattr(broker, "_topics", None)
    if topics is not None:
        # .get: indexing the defaultdict would create the topic as a side effect.
        found = topics.get(topic)
        return len(found.subscribers) if found is not None else 0
    legacy = getattr(scheduler, "event_subscriber", None)
    if legacy is not None:
        return len(legacy.get(topic, ()))
    return None


def spans_extension(scheduler: Any) -> Any | None:
    """The scheduler's spans extension, or None on Dask without spans (< 2023.6)."""
    extensions = getattr(scheduler, "extensions", None) or {}
    return extensions.get("spans")
