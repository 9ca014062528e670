"""What every plot shares: object-API figures, saving, and checks of the input.

Figures are made with :class:`matplotlib.figure.Figure` and an Agg canvas, never
with ``pyplot``: nothing is left in pyplot's global figure list, so a long
session or a report with dozens of figures does not leak them. A notebook still
shows a returned figure (IPython renders any ``Figure``).
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
from matplotlib.figure import Figure

#: Resolution of saved figures (as roastcoffea 0.1.2).
DPI = 150

#: Colors used by every plot, in order (matplotlib's default cycle, named).
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2")


def new_figure(
    figsize: tuple[float, float], nrows: int = 1, ncols: int = 1, **subplots: Any
) -> tuple[Figure, Any]:
    """A figure with an Agg canvas and its axes (an array when there are several)."""
    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(nrows, ncols, **subplots)


def finish(fig: Figure, output_path: str | os.PathLike[str] | None) -> None:
    """Save ``fig`` when ``output_path`` is given (format from the suffix)."""
    if output_path:
        fig.savefig(os.fspath(output_path), dpi=DPI)


def require(value: Any, what: str) -> Any:
    """``value``, or ValueError naming ``what`` when it is None or empty."""
    if value is None or (hasattr(value, "__len__") and len(value) == 0):
        raise ValueError(f"no {what} to plot")
    return value


def require_key(data: Mapping[str, Any] | None, key: str, source: str) -> Any:
    """``data[key]``, or ValueError naming the key and where it was looked for."""
    if data is None:
        raise ValueError(f"{source} is None: nothing to plot (needs {key!r})")
    if not isinstance(data, Mapping):
        raise ValueError(f"{source} must be a mapping, not {type(data).__name__}")
    value = data.get(key)
    if value is None or (hasattr(value, "__len__") and len(value) == 0):
        raise ValueError(f"{source} has no {key!r} data to plot")
    return value


def to_datetime(value: Any) -> dt.datetime:
    """A timezone-aware UTC datetime from a datetime or epoch seconds."""
    if isinstance(value, dt.datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=dt.timezone.utc)
    return dt.datetime.fromtimestamp(float(value), tz=dt.timezone.utc)


def time_axis(ax: Axes, ylabel: str, title: str) -> None:
    """Label a timeline: UTC time on x (concise dates), ``ylabel`` with its unit."""
    locator = AutoDateLocator()
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(ConciseDateFormatter(locator, tz=dt.timezone.utc))
    ax.set_xlabel("time (UTC)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)


def finite(values: Any) -> np.ndarray:
    """The finite float values of ``values`` (None and NaN dropped)."""
    array = np.array([np.nan if v is None else v for v in values], dtype=float)
    return array[np.isfinite(array)]
