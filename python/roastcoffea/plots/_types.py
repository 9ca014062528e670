"""The types of the figure functions' common parameters and result."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

#: ``metrics["tracking_data"]``, the worker time series, or None.
TrackingData = Mapping[str, Any] | None
#: A figure size in inches.
Size = tuple[float, float]
#: What a figure function returns.
FigureAxes = tuple[Figure, Axes]
