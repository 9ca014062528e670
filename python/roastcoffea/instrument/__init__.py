"""Chunk instrumentation of coffea processors: ``@track_metrics`` and sections.

Decorate a processor's ``process`` and every call becomes one *chunk record*
(:mod:`roastcoffea.records` lists its keys)::

    class MyProcessor(processor.ProcessorABC):
        @track_metrics
        def process(self, events):
            with track_time(self, "selection"):
                ...
            with track_bytes(self, events, "jets"):
                jets = events.Jet.pt + 0
            return output

No opt-in is needed. On a Dask worker with the roastcoffea worker plugin (which
:class:`~roastcoffea.RoastPlugin` installs), the record goes to the plugin,
which adds the whole task's time on the worker when the task ends and sends it
to the scheduler on the worker's event stream; a collector finds it in its span.
Anywhere else (e.g. coffea's iterative executor in the client process) it goes
to this process's bounded store, :func:`roastcoffea.records.drain_local_records`.

The decorator never changes the processor, its class or its output, and never
raises an error of its own: what cannot be measured is None in the record with
the reason in ``record["unavailable"]``, and internal failures are counted
(:func:`instrumentation_counters`). An exception of ``process()`` itself is
re-raised after a record with ``error`` set has been sent.

The active chunk is found through a context variable, so the section context
managers work with any number of worker threads; outside a decorated call
they do nothing.
"""

from __future__ import annotations

from roastcoffea.instrument._counters import instrumentation_counters
from roastcoffea.instrument.decorator import track_metrics
from roastcoffea.instrument.phases import track_phases
from roastcoffea.instrument.sections import (
    BaseInstrumentationContext,
    track_bytes,
    track_memory,
    track_section,
    track_time,
)

__all__ = [
    "BaseInstrumentationContext",
    "instrumentation_counters",
    "track_bytes",
    "track_memory",
    "track_metrics",
    "track_phases",
    "track_section",
    "track_time",
]
