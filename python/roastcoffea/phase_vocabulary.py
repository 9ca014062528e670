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
#: Activity label of a phase's work on helper threads (uproot's executor pools): beside
#: the task's phases, not in their sum.
HELPER_ACTIVITY = "helper:{}"
#: The phase each phase activity is of: ``{"phase:open": "open", ...}``.
PHASE_OF_ACTIVITY = {PHASE_ACTIVITY.format(p): p for p in PHASES}
#: Activities counting the measured tasks, those whose output was measured, and the
#: clock's own cost (its switches, and their estimated seconds).
TASKS_ACTIVITY, OUTPUTS_ACTIVITY, CLOCK_ACTIVITY = "phase-tasks", "phase-outputs", "phase-clock"
#: Activity counting the calls the measured tasks' executors ran on helper threads.
HELPERS_ACTIVITY = "phase-helpers"
#: Activity counting the measured tasks whose run-queue delay was read (Linux's schedstat).
CPU_WAIT_TASKS_ACTIVITY = "phase-cpu-wait-tasks"
#: Units (never Dask's "seconds": those are subtracted from the task's thread time).
#: CPU_WAIT: the time a phase's thread was runnable, waiting for a CPU (its run-queue delay).
WALL, CPU, CPU_WAIT, BYTES, COMPRESSED, COUNT = (
    "wall-seconds",
    "cpu-seconds",
    "cpu-wait-seconds",
    "bytes",
    "compressed-bytes",
    "count",
)


#: What every activity of the phase clock starts with, and no activity of Dask's.
ACTIVITY_PREFIXES = ("phase:", "phase-", "decompress:", "helper:")


def is_phase_activity(activity: str) -> bool:
    """Whether a digest activity is the phase clock's (it has its own views), not Dask's."""
    return activity.startswith(ACTIVITY_PREFIXES)


#: Where a task's digests go in its fine metrics: whether its output was measured,
#: the names of the codecs it decompressed with, the phases its helper threads ran (each
#: in the order of its values), and whether its run-queue delay was measured.
Layout = tuple[bool, tuple[str, ...], tuple[str, ...], bool]
#: A task's fine metrics: its layout and a value per label of :func:`digest_labels`.
PhaseDigests = tuple[Layout, list[float]]
#: Layouts whose labels are remembered (a worker sees a handful); beyond, forgotten.
MAX_LAYOUTS = 256
_LABELS: dict[Layout, tuple[tuple[str, str], ...]] = {}


def digest_labels(layout: Layout) -> tuple[tuple[str, str], ...]:
    """The ``(activity, unit)`` of each value of a task's digests in ``layout``.

    The worker sends a task's phases as values only, in this order; the scheduler
    and Dask's filing read them with these labels
    (``roastcoffea.plugin.worker.phases.phase_digests`` makes the values).
    """
    labels = _LABELS.get(layout)
    if labels is not None:
        return labels
    output_measured, codec_names, helper_phases, cpu_wait = layout
    built: list[tuple[str, str]] = []
    for phase in PHASES:
        if phase != "output" or output_measured:
            built += ((PHASE_ACTIVITY.format(phase), WALL), (PHASE_ACTIVITY.format(phase), CPU))
    built += ((PHASE_ACTIVITY.format("read"), BYTES), (PHASE_ACTIVITY.format("decompress"), BYTES))
    for name in codec_names:
        activity = CODEC_ACTIVITY.format(name)
        built += ((activity, WALL), (activity, CPU), (activity, BYTES), (activity, COMPRESSED))
    built += ((TASKS_ACTIVITY, COUNT), (CLOCK_ACTIVITY, COUNT))
    built += ((CLOCK_ACTIVITY, WALL), (CLOCK_ACTIVITY, CPU))
    if output_measured:
        built.append((OUTPUTS_ACTIVITY, COUNT))
    for phase in helper_phases:
        built += ((HELPER_ACTIVITY.format(phase), WALL), (HELPER_ACTIVITY.format(phase), CPU))
    if helper_phases:
        built.append((HELPERS_ACTIVITY, COUNT))
    if cpu_wait:
        for phase in PHASES:
            if phase != "output" or output_measured:
                built.append((PHASE_ACTIVITY.format(phase), CPU_WAIT))
        built += ((CLOCK_ACTIVITY, CPU_WAIT), (CPU_WAIT_TASKS_ACTIVITY, COUNT))
    if len(_LABELS) >= MAX_LAYOUTS:
        _LABELS.clear()
    labels = _LABELS[layout] = tuple(built)
    return labels
