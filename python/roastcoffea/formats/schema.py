"""What a saved measurement may hold: every value is checked before anything reads it.

A measurement directory comes from anywhere (a colleague, a CI artefact, an old
version). :func:`check_metrics` and :func:`check_metadata` hold each value of a
loaded measurement against its documented shape (docs/metrics.md) and raise
:class:`~roastcoffea.errors.DecodeError` naming the file and the field at the
first mismatch, so that the summary, the report, the figures and the comparison
only ever meet values of the shapes they draw. Messages describe a value by its
type and size, never by its content.

The bounds: numbers are finite and at most :data:`MAX_MAGNITUDE` in absolute
value (no real run comes near: 10^18 bytes is an exabyte), text is at most
:data:`MAX_TEXT` characters, and times lie between :data:`EARLIEST` and
:data:`LATEST`. Keys the schema does not know (written by a newer roastcoffea)
have only their texts bounded, and are kept.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Any

from roastcoffea.errors import DecodeError

#: Largest absolute value of a number in a measurement.
MAX_MAGNITUDE = 1e18
#: Longest text (a dataset name, a file path, a message).
MAX_TEXT = 1 << 20
#: The range of the times a measurement holds (worker series, metadata).
EARLIEST = datetime(1970, 1, 1, tzinfo=timezone.utc)
LATEST = datetime(2200, 1, 1, tzinfo=timezone.utc)

#: A check: raises :class:`Mismatch` when the value does not fit.
Check = Callable[[Any], None]


class Mismatch(Exception):
    """A value that does not fit its shape; containers add their keys on its way up, so
    that a location is only ever written for the value that failed."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.path: list[str] = []

    def located(self, where: str) -> DecodeError:
        return DecodeError(f"{where}{''.join(reversed(self.path))}: {self.message}")


def describe(value: Any) -> str:
    """What ``value`` is, by type and size only (never its content)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        digits = len(str(abs(value))) if abs(value) < 10**50 else "more than 50"
        return f"an integer of {digits} digits"
    if isinstance(value, float):
        return "a number" if math.isfinite(value) else "a non-finite number"
    if isinstance(value, str):
        return f"a text of {len(value)} characters"
    if isinstance(value, (list, tuple, set, frozenset)):
        return f"a {type(value).__name__} of {len(value)} items"
    if isinstance(value, Mapping):
        return f"a mapping of {len(value)} entries"
    return f"a {type(value).__name__}"


def _fail(expected: str, value: Any) -> None:
    raise Mismatch(f"expected {expected}, found {describe(value)}")


def _inside(step: str, check: Check, value: Any) -> None:
    """``check(value)``, a failure located one step further in."""
    try:
        check(value)
    except Mismatch as mismatch:
        mismatch.path.append(step)
        raise


#: Containers nested deeper than this are refused (read without recursion).
MAX_DEPTH = 100


def check_depth(value: Any, path: Any) -> None:
    """Refuse JSON nested deeper than :data:`MAX_DEPTH` (read without recursion)."""
    level = [value]
    for depth in range(MAX_DEPTH + 1):
        level = [
            child
            for item in level
            if isinstance(item, (dict, list))
            for child in (item.values() if isinstance(item, dict) else item)
        ]
        if not level:
            return
        if depth == MAX_DEPTH:
            raise DecodeError(f"{path}: nested deeper than {MAX_DEPTH} levels")


# ---- checks ---------------------------------------------------------------------------


def number(value: Any) -> None:
    """A finite int or float within ±:data:`MAX_MAGNITUDE` (not a boolean)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        _fail("a number", value)
    if isinstance(value, float) and not math.isfinite(value):
        _fail("a finite number", value)
    if abs(value) > MAX_MAGNITUDE:
        raise Mismatch("a number beyond ±1e18, which no measurement holds")


def count(value: Any) -> None:
    """An int >= 0 within :data:`MAX_MAGNITUDE`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        _fail("a whole number >= 0", value)
    number(value)


def seconds(value: Any) -> None:
    """A :func:`number` of seconds, never negative (a duration, a CPU time)."""
    number(value)
    if value < 0:
        _fail("seconds >= 0", value)


def at_least_one(value: Any) -> None:
    """A :func:`count` of at least one (a divisor)."""
    count(value)
    if value < 1:
        _fail("a whole number >= 1", value)


def text(value: Any) -> None:
    """A str of at most :data:`MAX_TEXT` characters."""
    if not isinstance(value, str):
        _fail("a text", value)
    if len(value) > MAX_TEXT:
        raise Mismatch(f"a text of {len(value)} characters, above {MAX_TEXT}")


def moment(value: Any) -> None:
    """A timezone-aware datetime between :data:`EARLIEST` and :data:`LATEST`."""
    if not isinstance(value, datetime) or value.tzinfo is None:
        _fail("a date and time with its time zone", value)
    if not EARLIEST <= value < LATEST:
        raise Mismatch(f"a time outside {EARLIEST.year}-{LATEST.year}")


def epoch(value: Any) -> None:
    """Seconds since the Unix epoch within the time range."""
    number(value)
    if not EARLIEST.timestamp() <= value < LATEST.timestamp():
        raise Mismatch(f"a time outside {EARLIEST.year}-{LATEST.year}")


def sample(value: Any) -> None:
    """A value of a worker series: a number, or NaN or None where it was not reported."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return
    number(value)


def span_key(value: Any) -> None:
    """A span metric key: ``(context, prefix, activity, unit)``, or 0.1.2's 3 of them."""
    if not (isinstance(value, tuple) and len(value) in (3, 4)):
        _fail("a span metric key (context, prefix, activity, unit)", value)
    for i, item in enumerate(value):
        _inside(f"[{i}]", text, item)


def entry_range(value: Any) -> None:
    """A record whose ``entry_stop`` is not before its ``entry_start`` (when both are counts)."""
    start, stop = value.get("entry_start"), value.get("entry_stop")
    if isinstance(start, int) and isinstance(stop, int) and stop < start:
        raise Mismatch("an entry range that ends before it starts (entry_stop < entry_start)")


def all_of(*checks: Check) -> Check:
    """A value that passes every check, in order."""

    def checked(value: Any) -> None:
        for check in checks:
            check(value)

    return checked


def optional(check: Check) -> Check:
    def checked(value: Any) -> None:
        if value is not None:
            check(value)

    return checked


def sequence(item: Check) -> Check:
    """A list or tuple whose items pass ``item``."""

    def checked(value: Any) -> None:
        if not isinstance(value, (list, tuple)):
            _fail("a list", value)
        i = 0
        try:
            for i, entry in enumerate(value):  # noqa: B007 - i locates a failure
                item(entry)
        except Mismatch as mismatch:
            mismatch.path.append(f"[{i}]")
            raise

    return checked


def pair(first: Check, second: Check) -> Check:
    def checked(value: Any) -> None:
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            _fail("a pair", value)
        _inside("[0]", first, value[0])
        _inside("[1]", second, value[1])

    return checked


def _entries(value: Any, key: Check, check_of: Callable[[Any], Check]) -> None:
    """Each key of a mapping passes ``key``, each value the check ``check_of(key)``."""
    if not isinstance(value, Mapping):
        _fail("a mapping", value)
    k: Any = None
    step = ""
    try:
        for k, v in value.items():
            step = " (a key)"
            key(k)
            step = ""
            check_of(k)(v)
    except Mismatch as mismatch:
        mismatch.path.append(step or f"[{location(k)}]")
        raise


def mapping(key: Check, value_check: Check) -> Check:
    """A dict whose keys pass ``key`` and values pass ``value_check``."""
    return lambda value: _entries(value, key, lambda _: value_check)


def fields(spec: Mapping[str, Check]) -> Check:
    """A dict with text keys: the known ones pass their check, the others are plain data."""
    return lambda value: _entries(value, text, lambda k: spec.get(k, plain))


def plain(value: Any) -> None:
    """Any data a measurement may hold where no shape is documented (a newer key, a
    user's custom metrics): only its texts are bounded. Nothing draws such values."""
    if isinstance(value, str):
        text(value)
    elif isinstance(value, Mapping):
        _entries(value, plain, lambda _: plain)
    elif isinstance(value, (list, tuple, set, frozenset)):
        sequence(plain)(list(value) if isinstance(value, (set, frozenset)) else value)


def _short(item: Any) -> bool:
    if isinstance(item, str):
        return len(item) <= 40 and item.isprintable()
    return isinstance(item, int) and not isinstance(item, bool) and abs(item) < 10**18


def location(key: Any) -> str:
    """A key as a location: short text keys quoted, anything else by its type."""
    if isinstance(key, str) and len(key) <= 80 and key.isprintable():
        return repr(key)
    if isinstance(key, tuple) and len(key) <= 6 and all(_short(k) for k in key):
        return repr(key)
    return describe(key)


# ---- the measurement's shapes ----------------------------------------------------------

some_number = optional(number)
some_seconds = optional(seconds)
some_count = optional(count)
some_text = optional(text)
texts = sequence(text)
numbers_by_name = mapping(text, some_number)
table = mapping(text, numbers_by_name)  # {row: {column: number}}


#: A chunk record's numbers and counts (roastcoffea.records, docs/metrics.md "Chunk records").
CHUNK_NUMBERS = (
    "duration", "process_cpu_seconds", "task_duration", "mem_before_mib", "mem_after_mib",
    "mem_delta_mib", "branches_read_percent", "bytes_read_percent", "instrument_seconds",
    "instrument_cpu_seconds", "accessed_unit_entries",
)  # fmt: skip
#: A chunk record's instants, epoch seconds.
CHUNK_TIMES = ("t_start", "t_end", "task_start", "task_end", "timestamp")
CHUNK_COUNTS = (
    "num_events", "entry_start", "entry_stop", "bytes_read", "bytes_read_task",
    "num_branches_accessed", "accessed_bytes", "accessed_uncompressed_bytes",
    "accessed_used_bytes", "accessed_embedded_bytes", "instrument_bytes", "v", "open_bytes",
    "open_requests", "instrument_requests", "instrument_ranges", "read_requests_task",
    "read_ranges_task",
)  # fmt: skip
CHUNK_TEXTS = (
    "kind", "dataset", "file", "treename", "uuid", "error", "task_key", "prefix", "storage_unit",
)  # fmt: skip
CHUNK_RECORD = all_of(
    fields(
        {
            **dict.fromkeys(CHUNK_NUMBERS, some_number),
            **dict.fromkeys(CHUNK_TIMES, optional(epoch)),
            **dict.fromkeys(CHUNK_COUNTS, some_count),
            **dict.fromkeys(CHUNK_TEXTS, some_text),
            "worker": some_text,
            "span": some_text,
            "accessed_branches": optional(texts),
            "timing": optional(numbers_by_name),
            "memory": optional(numbers_by_name),
            "bytes": optional(numbers_by_name),
            "section_counts": optional(mapping(text, mapping(text, some_count))),
            "custom": optional(mapping(text, plain)),
            "unavailable": optional(mapping(text, text)),
            "accessed_baskets": optional(mapping(text, sequence(number))),
            "file_metadata": optional(
                fields({"filename": some_text, "compression_ratio": some_number})
            ),
        }
    ),
    entry_range,
)

#: A file's reads are of ``basket`` s (a TTree) or ``page`` s (an RNTuple).
UNIT = {"storage_unit": some_text}
#: The numbers of a file's line in ``file_read_metrics``.
FILE_READ_NUMBERS = (
    "num_chunks", "total_branches", "branches_read", "branches_read_percent",
    "total_tree_bytes", "baskets_read", "bytes_read", "bytes_read_uncompressed",
    "bytes_read_percent", "compression_ratio",
)  # fmt: skip

#: A phase record (docs/metrics.md "Processor phases").
PHASE_RECORD = all_of(
    fields(
        {
            "t_start": optional(epoch),
            "t_stop": optional(epoch),
            "elapsed": some_seconds,
            **dict.fromkeys(("entry_start", "entry_stop", "read_bytes", "thread", "v"), some_count),
            **dict.fromkeys(
                ("kind", "dataset", "file", "task_key", "prefix", "worker", "span"), some_text
            ),
            "wall": mapping(text, some_seconds),
            "cpu": mapping(text, some_seconds),
            "cpu_wait": optional(mapping(text, some_seconds)),
            "codecs": optional(mapping(text, sequence(number))),
            "helpers": optional(
                fields(
                    {
                        "runs": some_count,
                        "wall": mapping(text, some_seconds),
                        "cpu": mapping(text, some_seconds),
                    }
                )
            ),
        }
    ),
    entry_range,
)

#: A row of per_prefix or per_worker: task statistics (docs/metrics.md).
TASK_NUMBERS = (
    "tasks", "erred", "compute_seconds", "transfer_seconds", "output_bytes",
    "thread_cpu_seconds", "thread_noncpu_seconds", "task_seconds",
)  # fmt: skip


def flag(value: Any) -> None:
    if not isinstance(value, bool):
        _fail("true or false", value)


#: ``record_coverage``: the records against coffea's count (missing may be negative).
_COVERED = {
    f"{w}_{end}": some_count for w in ("chunks", "events") for end in ("recorded", "reported")
}
_COVERED |= {f"{w}_missing": some_number for w in ("chunks", "events")}
_COVERAGE = {"complete": optional(flag), "causes": optional(texts)}
RECORD_COVERAGE = fields(
    {**_COVERED, **_COVERAGE, "per_dataset": optional(mapping(text, fields(_COVERED)))}
)

#: A file's line in ``read_shapes`` (the reads table divides by its chunks).
READ_SHAPE = fields(
    {
        **dict.fromkeys(
            ("requests", "ranges", "fetched_bytes", "open_requests", "open_bytes", "basket_bytes"),
            count,
        ),
        "chunks": at_least_one,
        "requests_per_chunk": number,
        "metadata_percent": some_number,
        "amplification": some_number,
        **dict.fromkeys(("decompressed_bytes", "used_bytes"), some_count),
        **dict.fromkeys(("decompress_amplification", "unit_entries", "chunk_entries"), some_number),
        "remote": flag,
        "bytes_per_request": optional(mapping(text, some_number)),
        **UNIT,
    }
)


TASK_ROW = fields(
    {
        **dict.fromkeys(TASK_NUMBERS, some_number),
        "first_start": optional(epoch),
        "last_stop": optional(epoch),
        "processor": optional(flag),
    }
)


def chunk_span(value: Any) -> None:
    """A chunk_info value: ``(t_start, t_end, bytes read)``, its times epoch seconds."""
    if not isinstance(value, (list, tuple)) or len(value) != 3:
        _fail("(start, end, bytes read)", value)
    _inside("[0]", optional(epoch), value[0])
    _inside("[1]", optional(epoch), value[1])
    _inside("[2]", optional(number), value[2])


#: A worker that left or ran unmonitored (the collector's lists).
WORKER_ENTRY = fields(
    {
        **dict.fromkeys(("removed", "added", "restarted_at"), some_number),
        **dict.fromkeys(
            ("address", "name", "kind", "stimulus_id", "close_reason", "restarted_as", "reason"),
            some_text,
        ),
    }
)


#: The worker series of tracking_data: {worker: [(time, value), ...]}.
SERIES = mapping(text, sequence(pair(moment, sample)))

#: The worker series' names in tracking_data.
SERIES_NAMES = (
    "worker_memory", "worker_memory_limit", "worker_cores", "worker_active_tasks",
    "worker_executing", "worker_nbytes", "worker_occupancy", "worker_last_seen", "worker_cpu",
    "worker_spilled", "worker_net_read", "worker_net_write", "worker_disk_read",
    "worker_disk_write", "resolution",
)  # fmt: skip
TRACKING = fields(
    {
        "worker_counts": mapping(moment, count),
        **dict.fromkeys(SERIES_NAMES, SERIES),
        "cores_per_worker": some_number,
    }
)

#: The scalar metrics: a number, or None (unmeasured, the reason in "unavailable"); with
#: roastcoffea 0.1.2's names of them, which its files and older ones of ours hold.
NUMBERS = (
    "avg_branches_read_percent", "avg_bytes_read_percent", "avg_cpu_time_per_chunk",
    "avg_memory_per_worker_bytes", "avg_workers", "bytes_read_compressed",
    "bytes_read_uncompressed", "chunk_bytes_read", "chunk_bytes_read_task",
    "chunk_cpu_time_max", "chunk_cpu_time_mean", "chunk_cpu_time_min", "chunk_cpu_time_std",
    "chunk_duration_max", "chunk_duration_mean", "chunk_duration_min", "chunk_duration_std",
    "chunk_events_max", "chunk_events_mean", "chunk_events_min", "chunk_events_std",
    "chunk_mem_delta_max_mib", "chunk_mem_delta_mean_mib", "chunk_mem_delta_min_mib",
    "chunk_mem_delta_std_mib", "chunk_task_duration_max", "chunk_task_duration_mean",
    "chunk_task_duration_min", "chunk_task_duration_std", "chunks_task_seconds",
    "compression_ratio", "compression_time_seconds", "core_efficiency", "cores_per_worker",
    "data_rate_gbps", "decompress_throughput_mb_s", "decompression_time_seconds",
    "deserialization_time_seconds", "disk_read_bytes", "disk_write_bytes",
    "elapsed_time_seconds", "event_rate_agg_khz", "event_rate_core_hz", "event_rate_core_khz",
    "event_rate_cpu_total_khz", "event_rate_elapsed_khz", "event_rate_wall_khz",
    "instrument_cpu_seconds", "instrument_seconds", "instrument_seconds_per_chunk",
    "interpret_rate_hz", "io_cpu_percent", "io_overhead_percent", "io_phase_percent",
    "io_wait_percent", "monitoring_percent",
    "monitoring_seconds_per_chunk", "output_phase_seconds", "overall_rate_gbps",
    "overall_rate_mb_s", "overhead_cpu_time_seconds", "overhead_io_wait_time_seconds",
    "overhead_noncpu_time_seconds", "peak_memory_bytes", "phase_clock_percent",
    "phase_clock_seconds", "phase_cpu_split_bound_seconds", "processor_cpu_percent",
    "processor_cpu_percentage", "processor_cpu_time_seconds", "processor_io_wait_percent",
    "processor_io_wait_time_seconds", "processor_noncpu_percent", "processor_noncpu_percentage",
    "processor_noncpu_time_seconds", "processor_task_time_seconds", "read_bandwidth_mb_s",
    "recomputed_chunk_cpu_seconds", "recomputed_chunk_seconds", "serialization_time_seconds",
    "speedup_factor", "total_bytes_memory_read", "total_bytes_memory_read_dask",
    "total_bytes_read", "total_compression_overhead_seconds", "total_cores", "total_cpu_time",
    "total_process_time", "total_serialization_overhead_seconds", "wall_time",
    "total_events", "cpu_us_per_event", "events_per_cpu_second", "idle_thread_seconds",
    "processing_seconds", "packing_bound_seconds", "longest_chunk_seconds",
    "bytes_per_request", "metadata_percent", "read_amplification", "user_profile_samples",
    "cpu_wait_seconds", "blocked_seconds", "cpu_wait_percent", "blocked_percent",
    "cpu_wait_split_bound_seconds", "decompress_amplification", "io_overhead_pct",
    "overall_rate_mbs", "chunk_mem_delta_max_mb", "chunk_mem_delta_mean_mb",
    "chunk_mem_delta_min_mb", "chunk_mem_delta_std_mb",
)  # fmt: skip
#: Instants: epoch seconds on the scheduler's clock.
INSTANTS = ("time_origin",)
#: The counts: a whole number >= 0, or None.
COUNTS = (
    "num_chunks", "num_failed_chunks", "num_successful_chunks", "total_events_from_chunks",
    "peak_workers", "phase_tasks", "phase_read_bytes", "phase_clock_switches",
    "recomputed_chunks", "recomputed_events", "total_branches_read", "read_requests",
    "metadata_bytes", "profile_samples", "helper_runs", "cpu_wait_tasks",
)  # fmt: skip

#: Every metric the schema knows: its check.
METRICS: dict[str, Check] = {
    **dict.fromkeys(NUMBERS, some_number),
    **dict.fromkeys(COUNTS, some_count),
    **dict.fromkeys(INSTANTS, optional(epoch)),
    "processor_prefix_source": some_text,
    "accessed_branches": optional(texts),
    "processor_prefixes": optional(texts),
    "bytes_read_percent_per_file": optional(sequence(some_number)),
    "compression_ratios": optional(sequence(some_number)),
    "chunk_info": optional(mapping(plain, chunk_span)),
    "custom_metrics": optional(mapping(plain, plain)),
    "dataset_totals": optional(mapping(text, plain)),
    "decompress_codecs": optional(table),
    "diagnosis": optional(
        sequence(
            fields(
                {
                    "message": some_text,
                    "rule": some_text,
                    "wall_at_stake_seconds": some_seconds,
                    "actions": optional(texts),
                    "knobs": optional(mapping(text, text)),
                }
            )
        )
    ),
    "diagnosis_summary": some_text,
    "failed_chunks": optional(sequence(CHUNK_RECORD)),
    "recomputed_chunk_records": optional(sequence(CHUNK_RECORD)),
    "raw_chunk_metrics": optional(sequence(CHUNK_RECORD)),
    "raw_phase_records": optional(sequence(PHASE_RECORD)),
    "file_metadata": optional(mapping(text, fields({"filename": some_text}))),
    "file_read_metrics": optional(
        mapping(text, fields({**dict.fromkeys(FILE_READ_NUMBERS, some_number), **UNIT}))
    ),
    "monitoring": optional(
        fields(
            {
                "collector_errors": optional(texts),
                "notes": optional(texts),
                "errors": optional(mapping(text, some_number)),
                "records_lost": optional(mapping(text, some_count)),
                "run_records_dropped": some_count,
            }
        )
    ),
    "peak_memory_per_worker_bytes": optional(numbers_by_name),
    "per_dataset": optional(table),
    "per_prefix": optional(mapping(text, TASK_ROW)),
    "per_worker": optional(mapping(text, TASK_ROW)),
    "per_worker_fine_metrics": optional(mapping(text, mapping(span_key, some_number))),
    "raw_span_metrics": optional(mapping(span_key, some_number)),
    "phase_chunk_seconds": optional(table),
    "phase_cpu_seconds": optional(numbers_by_name),
    "helper_wall_seconds": optional(numbers_by_name),
    "helper_cpu_seconds": optional(numbers_by_name),
    "phase_wall_seconds": optional(numbers_by_name),
    "phase_cpu_wait_seconds": optional(mapping(text, some_seconds)),
    "phase_blocked_seconds": optional(mapping(text, some_seconds)),
    "cpu_wait_per_worker": optional(mapping(text, some_seconds)),
    "node_per_host": optional(table),
    "phase_share_percent": optional(numbers_by_name),
    "phase_per_dataset": optional(table),
    "phase_per_worker": optional(table),
    "sections": optional(mapping(text, mapping(text, fields({})))),
    "span_info": optional(fields({"name": some_text, "id": some_text})),
    "totals_source": optional(mapping(text, text)),
    "tracking_data": optional(TRACKING),
    "unavailable": optional(mapping(text, text)),
    **dict.fromkeys(
        ("lost_workers", "retired_workers", "restarted_workers", "unmonitored_workers"),
        optional(sequence(WORKER_ENTRY)),
    ),
    "workers_removed": optional(mapping(plain, plain)),
    "wall_split": optional(table),
    "wall_split_source": some_text,
    "tail_chunks": optional(sequence(fields({"file": some_text, "seconds": number}))),
    "tail_cause": optional(
        fields({"kind": text, "name": some_text, "phase": some_text, "dataset": some_text})
    ),
    "record_coverage": optional(RECORD_COVERAGE),
    "read_shapes": optional(mapping(text, READ_SHAPE)),
    "cost_per_event_us": optional(table),
    "hot_lines": optional(sequence(fields({"function": text, "share_percent": number}))),
    "hot_lines_per_worker": optional(mapping(text, sequence(fields({"function": text})))),
    "profile_tree": optional(fields({"name": text, "count": number})),
}

#: metadata.json: the entries this package writes (others are plain data).
METADATA = fields(
    {
        "format": text,
        "schema_version": count,
        "name": text,
        "start_utc": some_text,
        "end_utc": some_text,
        "t0": epoch,
        "t1": epoch,
        "elapsed_time_seconds": some_number,
        "saved_utc": some_text,
        "versions": optional(mapping(text, some_text)),
        "native_file": some_text,
        "chunks_file": some_text,
        "phases_file": some_text,
        "cluster": optional(mapping(text, plain)),
        "span": optional(mapping(text, plain)),
        "settings": optional(mapping(text, plain)),
    }
)


def check_metrics(metrics: Any, where: str, files: Mapping[str, str] | None = None) -> None:
    """Raise DecodeError naming ``where`` and the field when ``metrics`` is not a
    metrics dictionary of the documented shapes; a metric read from a file of its own
    (``files``: name -> path) names that file."""
    key: Any = None
    try:
        if not isinstance(metrics, Mapping):
            _fail("a mapping of metrics", metrics)
        for key, value in metrics.items():
            _inside(" (a metric name)", text, key)
            _inside(f"[{location(key)}]", METRICS.get(key, plain), value)
    except Mismatch as mismatch:
        source = files[key] if files and key in files else where
        raise mismatch.located(f"{source}: metrics") from None


def check_metadata(metadata: Any, where: str) -> None:
    """Raise DecodeError naming ``where`` and the field when ``metadata`` is malformed."""
    try:
        METADATA(metadata)
    except Mismatch as mismatch:
        raise mismatch.located(where) from None
