"""roastcoffea 0.1.2's backend interface, kept so that code subclassing it still imports.

roastcoffea measures through its Dask plugin pair; :class:`MetricsCollector`
takes ``backend="dask"`` only and does not call a backend object. A subclass
of :class:`AbstractMetricsBackend` is therefore a description of another
executor's collection, not something the collector runs (docs/compat.md).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any


class AbstractMetricsBackend(ABC):
    """The methods a roastcoffea 0.1.2 metrics backend implements."""

    @abstractmethod
    def start_tracking(self, interval: float) -> None:
        """Start sampling the workers every ``interval`` seconds."""

    @abstractmethod
    def stop_tracking(self) -> dict[str, Any]:
        """Stop sampling; the tracking data (worker counts, memory, CPU, ...)."""

    @abstractmethod
    def create_span(self, name: str) -> Any:
        """A context manager that groups the work it encloses under ``name``."""

    @abstractmethod
    def get_span_metrics(self, span_id: Any) -> dict[tuple[str, ...], Any]:
        """The span's fine metrics, ``{(context, prefix, activity, unit): value}``."""

    @abstractmethod
    def supports_fine_metrics(self) -> bool:
        """Whether the executor reports fine metrics at all."""


__all__ = ["AbstractMetricsBackend"]
