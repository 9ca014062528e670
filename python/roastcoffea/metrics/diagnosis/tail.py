"""The tail rule: the end of the processing, when fewer tasks ran than there were threads.

Its stake is the processing's wall time beyond what perfect packing allows: with
smaller chunks the remedy, beyond the packing bound (``processing_seconds -
packing_bound_seconds``: smaller chunks shorten the longest one too), else beyond the
longer of the bound and the longest chunk. Its cause is ``tail_cause``: one file, one
dataset, one worker, a few long chunks, or too few chunks for the threads.
"""

from __future__ import annotations

from typing import Any

from roastcoffea.metrics._util import Metrics
from roastcoffea.metrics.diagnosis.finding import Action, Finding
from roastcoffea.units import format_time

#: The tail is worth a finding when its idle thread-seconds are this % of the processing's.
TAIL_IDLE_PERCENT = 10.0

SMALLER = Action(
    "smaller chunks (the Runner's chunksize) spread the work over the threads",
    "chunk_size",
    "smaller",
)


def tail_findings(out: Metrics) -> list[Finding]:
    """The tail's finding when it left :data:`TAIL_IDLE_PERCENT` of the thread-seconds idle."""
    split = out.get("wall_split")
    if split is None:
        return []
    tail = split["tail"]
    capacity = split["steady"]["thread_seconds"] + tail["thread_seconds"]
    share = 100.0 * tail["idle_thread_seconds"] / capacity if capacity > 0 else 0.0
    if share < TAIL_IDLE_PERCENT:
        return []
    cause = out.get("tail_cause")
    packing = out.get("packing_bound_seconds") or 0.0
    bound = max(packing, out.get("longest_chunk_seconds"))
    processing = out.get("processing_seconds")
    head = (
        f"the tail took {format_time(tail['seconds'])} of {format_time(processing)} of "
        f"processing with {share:.1f}% of the thread-seconds idle (perfectly packed, the "
        f"processing would take {format_time(bound)})"
    )
    what, actions = _cause(cause)
    floor = packing if SMALLER in actions else bound
    evidence: dict[str, Any] = {
        "tail_seconds": tail["seconds"],
        "idle_thread_seconds": tail["idle_thread_seconds"],
        "packing_bound_seconds": bound,
        "chunks": out.get("num_chunks"),
        "threads": out.get("total_cores"),
        **({"tail_cause": cause} if cause else {}),
    }
    return [
        Finding(
            "tail",
            None if cause is None else cause["phase"],
            share,
            max(processing - floor, 0.0),
            f"{head}: {what}",
            actions,
            evidence,
        )
    ]


def _cause(cause: dict[str, Any] | None) -> tuple[str, tuple[Action, ...]]:
    if cause is None:
        return "too few chunks to keep every thread busy to the end", (SMALLER,)
    ratio, phase, kind, name = cause["vs_others"], cause["phase"], cause["kind"], cause["name"]
    if kind == "file":
        of = f" (dataset {cause['dataset']})" if cause.get("dataset") else ""
        what = (
            f"its slow chunks were file {name}'s{of}, {ratio:.1f}x the other files' median, "
            f"mostly in {phase}"
        )
        if phase in ("read", "open"):
            return what + ": that file's storage is slow", (
                Action("read it from a closer replica or cache it"),
            )
        return what + ": its chunks hold more work (events, branches)", (SMALLER,)
    if kind == "dataset":
        return (
            f"its slow chunks were dataset {name}'s, {ratio:.1f}x the other datasets' median, "
            f"mostly in {phase}",
            (
                Action(
                    "list it first in the fileset: the Runner submits the chunks in the "
                    "fileset's order, so its long chunks then start first"
                ),
                SMALLER,
            ),
        )
    if kind == "worker":
        return (
            f"its slow chunks ran on worker {name}, {ratio:.1f}x the other workers' median on "
            f"every file, mostly in {phase}",
            (Action("check that node (load, disk, network)"),),
        )
    return (
        f"a few long chunks held it (the longest {ratio:.1f}x the median, mostly in {phase})",
        (SMALLER,),
    )
