"""The types of the figure functions' common parameters and result."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

#: ``metrics["tracking_data"]``, the worker time series, or None.
TrackingData = Mapping[str, Any] | None
#: ``metrics["raw_chunk_metrics"]``, the chunk records, or None.
ChunkRecords = Sequence[Mapping[str, Any]] | None
#: ``metrics["raw_span_metrics"]``, Dask's span digests, or None.
SpanMetrics = Mapping[Any, Any] | None
#: A metrics dictionary, or None.
MetricsLike = Mapping[str, Any] | None
#: A figure size in inches.
Size = tuple[float, float]
#: What a figure function returns.
FigureAxes = tuple[Figure, Axes]
