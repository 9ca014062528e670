"""The worker half: :class:`RoastWorkerPlugin`, the phase clock's sink, the loader that
carries the plugin to a worker. A worker loads this half only."""

from __future__ import annotations

from roastcoffea.plugin.worker.plugin import RoastWorkerPlugin

__all__ = ["RoastWorkerPlugin"]
