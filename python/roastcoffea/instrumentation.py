"""roastcoffea 0.1.2's ``roastcoffea.instrumentation``: the section context managers."""

from roastcoffea.instrument.sections import (
    BaseInstrumentationContext,
    track_bytes,
    track_memory,
    track_section,
    track_time,
)

__all__ = [
    "BaseInstrumentationContext",
    "track_bytes",
    "track_memory",
    "track_section",
    "track_time",
]
