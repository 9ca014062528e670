"""The metrics dictionary a user holds: our keys once each, 0.1.2's names read as ours,
and the compact HTML summary a notebook shows."""

from __future__ import annotations

from typing import Any

from roastcoffea.compat_0_1_2.names import DIFFERENT_IN_0_1_2, METRIC_ALIASES


class MetricsDict(dict[str, Any]):
    """A metrics dictionary: a plain ``dict`` that Jupyter shows as a compact HTML summary.

    :meth:`~roastcoffea.MetricsCollector.get_metrics` and
    :func:`~roastcoffea.load_measurement` return one; everything that takes a
    dict takes it. It holds each quantity under one key; indexing, ``get`` and
    ``in`` also answer to roastcoffea 0.1.2's name of a key
    (``metrics["io_overhead_pct"]`` is ``metrics["io_overhead_percent"]``).
    Iterating and saving see our keys only.
    """

    __slots__ = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # A file written before the names were folded holds both names: keep ours.
        _fold(self)
        unavailable = dict.get(self, "unavailable")
        if isinstance(unavailable, dict) and any(old in unavailable for old in METRIC_ALIASES):
            self["unavailable"] = _fold(dict(unavailable))

    def __missing__(self, key: Any) -> Any:
        ours = METRIC_ALIASES.get(key) if isinstance(key, str) else None
        if ours is None or not dict.__contains__(self, ours):
            raise KeyError(key)
        return dict.__getitem__(self, ours)

    def __contains__(self, key: object) -> bool:
        if dict.__contains__(self, key):
            return True
        return isinstance(key, str) and dict.__contains__(self, METRIC_ALIASES.get(key, ""))

    def get(self, key: Any, default: Any = None) -> Any:
        """The value of ``key`` (ours or 0.1.2's name of it), else ``default``."""
        try:
            return self[key]
        except KeyError:
            return default

    def copy(self) -> MetricsDict:
        """A shallow copy that still answers to 0.1.2's names."""
        return MetricsDict(self)

    def _repr_html_(self) -> str:
        from roastcoffea.report.html import render_summary

        return render_summary(self)


def _fold(metrics: dict[str, Any]) -> dict[str, Any]:
    """``metrics`` with each 0.1.2 name that it holds moved to our key (unless ours is there,
    or the quantity differs, :data:`DIFFERENT_IN_0_1_2`)."""
    for old, ours in METRIC_ALIASES.items():
        if dict.__contains__(metrics, old) and ours not in DIFFERENT_IN_0_1_2:
            value = dict.pop(metrics, old)
            metrics.setdefault(ours, value)
    return metrics
