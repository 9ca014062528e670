"""Where the processor's time goes: the phases of its tasks, from the digests and phase records.

Source: the ``phase:<name>``, ``decompress:<codec>``, ``phase-tasks`` and
``phase-outputs`` activities of the span's ``execute`` digests, which the
worker plugin's phase clock adds to Dask's fine performance metrics (units
``wall-seconds``, ``cpu-seconds``, ``bytes``, ``compressed-bytes``,
``count``), with ``helper:<name>`` and ``phase-helpers`` for the work uproot's
executor pools ran on helper threads, and the ``kind="phases"`` records (one per
measured task) for the per-chunk and per-dataset views. Shares are of the phases'
total wall time, which is the measured tasks' compute time by construction; the
helpers' time is beside it.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import roastcoffea.phase_vocabulary as vocab
from roastcoffea.metrics._util import Metrics, is_number
from roastcoffea.metrics.fine import span_rows

if TYPE_CHECKING:
    from roastcoffea.metrics import MetricsInputs

#: Getting the data in: waiting for bytes, and the CPU that turns bytes into arrays.
IO_WAIT, IO_CPU = ("read",), ("decompress", "interpret")
#: All phases that serve the input, for io_phase_percent.
IO_PHASES = ("open", *IO_WAIT, *IO_CPU)


#: Keys this group puts; without a measured task all are None for one reason.
KEYS = (
    "phase_tasks",
    "phase_wall_seconds",
    "phase_cpu_seconds",
    "phase_cpu_split_bound_seconds",
    "phase_share_percent",
    "phase_per_worker",
    "output_phase_seconds",
    "phase_read_bytes",
    "read_bandwidth_mb_s",
    "decompress_codecs",
    "decompress_throughput_mb_s",
    "io_wait_percent",
    "io_cpu_percent",
    "io_phase_percent",
    "phase_clock_switches",
    "phase_clock_seconds",
    "phase_clock_percent",
    "helper_runs",
    "helper_wall_seconds",
    "helper_cpu_seconds",
)
#: Keys from the phase records.
RECORD_KEYS = (
    "raw_phase_records",
    "phase_per_dataset",
    "phase_chunk_seconds",
    "interpret_rate_hz",
)

Rows = dict[tuple[str, str, str], float]  # (worker, activity, unit) -> value


def compute(inputs: MetricsInputs, out: Metrics) -> None:
    """Put the phase metrics, or say for each why it is missing."""
    rows = execute_rows(inputs)
    tasks = _total(rows, vocab.TASKS_ACTIVITY, vocab.COUNT)
    if not tasks:
        reason = (
            "no task measured by the phase clock (it is off with RoastPlugin(phases=False), "
            "or the processor did not run coffea's Runner work function on a worker with "
            "the roastcoffea plugin)"
        )
        for key in (*KEYS, *RECORD_KEYS):
            out.missing(key, reason)
        return
    wall = {p: _total(rows, vocab.PHASE_ACTIVITY.format(p), vocab.WALL) for p in vocab.PHASES}
    cpu = {p: _total(rows, vocab.PHASE_ACTIVITY.format(p), vocab.CPU) for p in vocab.PHASES}
    if _total(rows, vocab.OUTPUTS_ACTIVITY, vocab.COUNT):
        out.put("output_phase_seconds", wall["output"])
    else:
        del wall["output"], cpu["output"]
        out.missing(
            "output_phase_seconds",
            "coffea's compression is off: Dask serialises the output after the task",
        )
    total = math.fsum(wall.values())
    out.put("phase_tasks", int(tasks))
    out.put("phase_wall_seconds", wall)
    out.put("phase_cpu_seconds", cpu)
    out.put("phase_cpu_split_bound_seconds", _total(rows, vocab.CLOCK_ACTIVITY, vocab.CPU))
    out.put("phase_share_percent", {p: _percent(s, total) for p, s in wall.items()})
    out.put("phase_per_worker", _per_worker(rows))
    read_bytes = _total(rows, vocab.PHASE_ACTIVITY.format("read"), vocab.BYTES)
    out.put("phase_read_bytes", int(read_bytes))
    _put_rate(out, "read_bandwidth_mb_s", read_bytes / 1e6, wall["read"], "no read wait measured")
    codecs = _codecs(rows)
    out.put("decompress_codecs", codecs)
    produced = _total(rows, vocab.PHASE_ACTIVITY.format("decompress"), vocab.BYTES)
    _put_rate(
        out,
        "decompress_throughput_mb_s",
        produced / 1e6,
        wall["decompress"],
        "no basket decompressed",
    )
    out.put("io_wait_percent", _percent(math.fsum(wall[p] for p in IO_WAIT), total))
    out.put("io_cpu_percent", _percent(math.fsum(wall[p] for p in IO_CPU), total))
    out.put("io_phase_percent", _percent(math.fsum(wall[p] for p in IO_PHASES), total))
    clock = _total(rows, vocab.CLOCK_ACTIVITY, vocab.WALL)
    out.put("phase_clock_switches", int(_total(rows, vocab.CLOCK_ACTIVITY, vocab.COUNT)))
    out.put("phase_clock_seconds", clock)
    out.put("phase_clock_percent", _percent(clock, total))
    _put_helpers(rows, out)
    _put_records(inputs.phases, out)


def _put_helpers(rows: Rows, out: Metrics) -> None:
    """The measured tasks' work on helper threads (uproot's executor pools), per phase."""
    runs = _total(rows, vocab.HELPERS_ACTIVITY, vocab.COUNT)
    if not runs:
        reason = (
            "no measured task handed work to uproot's executor pools (decompression_executor, "
            "interpretation_executor): all of it ran in the tasks' own threads, in their phases"
        )
        for key in ("helper_runs", "helper_wall_seconds", "helper_cpu_seconds"):
            out.missing(key, reason)
        return
    activities = {a for _, a, _ in rows}
    ran = [p for p in vocab.PHASES if vocab.HELPER_ACTIVITY.format(p) in activities]
    out.put("helper_runs", int(runs))
    for key, unit in (("helper_wall_seconds", vocab.WALL), ("helper_cpu_seconds", vocab.CPU)):
        out.put(key, {p: _total(rows, vocab.HELPER_ACTIVITY.format(p), unit) for p in ran})


def execute_rows(inputs: MetricsInputs) -> Rows:
    """The span's ``execute`` digests summed over spans and prefixes, by worker."""
    rows: Rows = defaultdict(float)
    for (worker, context, _, activity, unit), value in span_rows(inputs.snapshot).items():
        if context == "execute":
            rows[(worker, activity, unit)] += value
    return dict(rows)


def _total(rows: Rows, activity: str, unit: str) -> float:
    return math.fsum(v for (_, a, u), v in rows.items() if a == activity and u == unit)


def _percent(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole > 0 else 0.0


def _put_rate(out: Metrics, key: str, amount: float, seconds: float, reason: str) -> None:
    if seconds > 0:
        out.put(key, amount / seconds)
    else:
        out.missing(key, reason)


def _per_worker(rows: Rows) -> dict[str, dict[str, float]]:
    table: dict[str, dict[str, float]] = defaultdict(dict)
    for (worker, activity, unit), value in rows.items():
        if unit == vocab.WALL and activity in vocab.PHASE_OF_ACTIVITY:
            table[worker][vocab.PHASE_OF_ACTIVITY[activity]] = value
    return {w: {p: phases[p] for p in vocab.PHASES if p in phases} for w, phases in table.items()}


def _codecs(rows: Rows) -> dict[str, dict[str, float | None]]:
    """Per codec: wall and CPU seconds, bytes out and in, and MB/s of output."""
    prefix = vocab.CODEC_ACTIVITY.format("")
    names = sorted({a.removeprefix(prefix) for _, a, _ in rows if a.startswith(prefix)})
    codecs = {}
    for name in names:
        activity = vocab.CODEC_ACTIVITY.format(name)
        wall = _total(rows, activity, vocab.WALL)
        produced = _total(rows, activity, vocab.BYTES)
        codecs[name] = {
            "wall_seconds": wall,
            "cpu_seconds": _total(rows, activity, vocab.CPU),
            "bytes": produced,
            "compressed_bytes": _total(rows, activity, vocab.COMPRESSED),
            "throughput_mb_s": produced / 1e6 / wall if wall > 0 else None,
        }
    return codecs


def _put_records(records: list[dict[str, Any]], out: Metrics) -> None:
    """The per-chunk and per-dataset views, and the interpretation rate."""
    good = [r for r in records if isinstance(r.get("wall"), dict)]
    if not good:
        for key in RECORD_KEYS:
            out.missing(key, "no phase record reached the collector")
        return
    out.put("raw_phase_records", good)
    per_dataset: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    per_chunk: dict[str, list[float]] = defaultdict(list)
    for record in good:
        dataset = str(record.get("dataset"))
        for phase, seconds in record["wall"].items():
            if is_number(seconds):
                per_dataset[dataset][phase] += seconds
                per_chunk[phase].append(seconds)
    out.put("phase_per_dataset", {d: dict(p) for d, p in sorted(per_dataset.items())})
    out.put(
        "phase_chunk_seconds",
        {
            p: {
                "mean": statistics.fmean(per_chunk[p]),
                "median": statistics.median(per_chunk[p]),
                "max": max(per_chunk[p]),
            }
            for p in vocab.PHASES
            if per_chunk.get(p)
        },
    )
    events = [
        r["entry_stop"] - r["entry_start"]
        for r in good
        if is_number(r.get("entry_start")) and is_number(r.get("entry_stop"))
    ]
    if len(events) < len(good):
        out.missing("interpret_rate_hz", "a phase record has no entry range")
    else:
        interpret = math.fsum(per_dataset[d].get("interpret", 0.0) for d in per_dataset)
        _put_rate(out, "interpret_rate_hz", float(sum(events)), interpret, "no array built")
