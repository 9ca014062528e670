"""The Dask task a thread runs, found for the instrumentation of a processor's chunks."""

from __future__ import annotations

import dask
from distributed import get_worker
from distributed.worker import thread_state

from roastcoffea.instrument.running import RunningTask
from roastcoffea.plugin.protocol import PLUGIN_NAME


def running_task() -> RunningTask:
    """The task of the calling thread: the lookup the plugin hands the instrumentation
    (:func:`roastcoffea.instrument.running.set_lookup`).

    On a worker with the roastcoffea worker plugin the span is the running
    task's; otherwise the plugin is None and the span is the caller's innermost
    ``distributed.span`` (Dask annotations are a context variable), if any.
    """
    worker = plugin = key = None
    try:
        worker = get_worker()
    except ValueError:  # not in a Dask task
        pass
    else:
        plugin = worker.plugins.get(PLUGIN_NAME)
        key = getattr(thread_state, "key", None)
        if plugin is not None and hasattr(plugin, "add_chunk"):
            ts = worker.state.tasks.get(key) if key is not None else None
            return RunningTask(worker.address, plugin, key, getattr(ts, "span_id", None))
    annotation = dask.get_annotations().get("span")
    ids = annotation.get("ids") if isinstance(annotation, dict) else None
    address = getattr(worker, "address", None)
    return RunningTask(address, None, key, str(ids[-1]) if ids else None)
