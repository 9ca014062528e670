"""The phase clock's vocabulary: the phases, and how they appear in Dask's fine metrics.

Apart from the clock (:mod:`roastcoffea.instrument.phases`, native) so that reading a
saved measurement needs neither Dask's distributed nor the extension. The extension
names the same phases (``_native.PHASES``; a test keeps the two equal).
"""

from __future__ import annotations

#: The phases, in display order; ``other`` closes the sum.
PHASES = ("open", "read", "decompress", "interpret", "user", "output", "other")

# How the phases appear in Dask's fine performance metrics: the worker plugin
# digests them under these activities and units, the metrics read them back.
#: Activity label of a phase, and of a codec's share of ``decompress``.
PHASE_ACTIVITY, CODEC_ACTIVITY = "phase:{}", "decompress:{}"
#: Activities counting the measured tasks, those whose output was measured, and the
#: clock's own cost (its switches, and their estimated seconds).
TASKS_ACTIVITY, OUTPUTS_ACTIVITY, CLOCK_ACTIVITY = "phase-tasks", "phase-outputs", "phase-clock"
#: Units (never Dask's "seconds": those are subtracted from the task's thread time).
WALL, CPU, BYTES, COMPRESSED, COUNT = (
    "wall-seconds",
    "cpu-seconds",
    "bytes",
    "compressed-bytes",
    "count",
)


#: What every activity of the phase clock starts with, and no activity of Dask's.
ACTIVITY_PREFIXES = ("phase:", "phase-", "decompress:")


def is_phase_activity(activity: str) -> bool:
    """Whether a digest activity is the phase clock's (it has its own views), not Dask's."""
    return activity.startswith(ACTIVITY_PREFIXES)
