"""What a measurement hands back: plain data that a notebook also shows well."""

from __future__ import annotations

from typing import Any


class MetricsDict(dict[str, Any]):
    """A metrics dictionary: a plain ``dict`` that Jupyter shows as a compact HTML summary.

    :func:`~roastcoffea.metrics.compute_metrics` and
    :func:`~roastcoffea.load_measurement` return one; everything that takes a
    dict takes it.
    """

    def _repr_html_(self) -> str:
        from roastcoffea.report.html import render_summary

        return render_summary(self)
