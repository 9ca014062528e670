"""roastcoffea 0.1.2's ``roastcoffea.decorator``: ``track_metrics`` at its old path."""

from roastcoffea.instrument.decorator import track_metrics

__all__ = ["track_metrics"]
