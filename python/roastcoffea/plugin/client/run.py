"""A collector's run: its Dask span, and the annotation that keeps its tasks its own.

:func:`run_span` is what :class:`~roastcoffea.MetricsCollector` enters for its
block. Besides ``distributed.span``, it annotates every task submitted in the
block with the span's id (:data:`~roastcoffea.plugin.scheduler.workers.RUN_ANNOTATION`),
so that the scheduler plugin can put the tasks Dask grouped under another run's
span back into this one (:mod:`roastcoffea.plugin.scheduler.runs`).

The scheduler must know the span before it can place a task there, and Dask
creates a span only for a task whose group has none yet: when every group of
the block already belongs to another run, the span would never exist. So the
run declares it first with one task of a group of its own, which asks for a
resource no worker has and is released at once: it never runs, it only makes
Dask create the span.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import dask
import distributed

from roastcoffea.instrument.running import set_lookup
from roastcoffea.plugin.protocol import DECLARATION_PREFIX, RUN_ANNOTATION
from roastcoffea.plugin.task import running_task

#: A resource no worker offers: the declaration waits for it until it is released.
NO_WORKER_RESOURCE = "roastcoffea-never-granted"


@contextmanager
def run_span(client: Any, *tags: str) -> Iterator[str]:
    """Open a Dask span for a run; tasks submitted inside belong to it.

    Parameters
    ----------
    client : distributed.Client
        The client the run's tasks go through (synchronous or asynchronous).
    *tags : str
        The span's tags, as for ``distributed.span``.

    Yields
    ------
    str
        The span's id.

    Notes
    -----
    Like ``distributed.span``, the annotations live in a context variable: only
    submissions from the entering thread (or task) are tagged. Declaring the
    span never raises: without it, tasks Dask grouped under another run's span
    stay there, and the scheduler counts them (``runs:span-unknown``).
    """
    set_lookup(running_task)  # chunks run here (a local executor) find the run's span
    with distributed.span(*tags) as span_id, dask.annotate(**{RUN_ANNOTATION: span_id}):
        declare(client)
        yield span_id


def declare(client: Any) -> bool:
    """Make the scheduler create the current span now; False when that failed.

    One task with a key of its own group, restricted to a resource no worker
    has, submitted and released: the client sends both on its ordered stream,
    so the span exists before any later task of the run reaches the scheduler.
    """
    key = (f"{DECLARATION_PREFIX}-{uuid.uuid4().hex}", 0)
    try:
        future = client.submit(int, key=key, resources={NO_WORKER_RESOURCE: 1}, pure=False)
        future.release()
    except Exception:
        return False
    return True
