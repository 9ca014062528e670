"""What a notebook shows of a metrics dictionary: the compact HTML summary."""

from __future__ import annotations

from typing import Any


class MetricsDict(dict[str, Any]):
    """A metrics dictionary: a plain ``dict`` that Jupyter shows as a compact HTML summary.

    :meth:`~roastcoffea.MetricsCollector.get_metrics` and
    :func:`~roastcoffea.load_measurement` return one; everything that takes a
    dict takes it.
    """

    def _repr_html_(self) -> str:
        from roastcoffea.report.html import render_summary

        return render_summary(self)
