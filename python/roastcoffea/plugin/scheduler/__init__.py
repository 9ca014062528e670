"""The scheduler half: :class:`RoastPlugin`, its sampler, span and run bookkeeping, the
live stream and the Prometheus export. Only a scheduler loads it."""

from __future__ import annotations

from roastcoffea.plugin.scheduler.plugin import RoastPlugin

__all__ = ["RoastPlugin"]
