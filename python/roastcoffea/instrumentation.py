"""roastcoffea 0.1.2's ``roastcoffea.instrumentation``: its three section context managers."""

from roastcoffea.instrument import track_bytes, track_memory, track_time

__all__ = ["track_bytes", "track_memory", "track_time"]
