"""Reading a measurement saved by roastcoffea 0.1.2: the types its JSON lost, under our names."""

from __future__ import annotations

import ast
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from roastcoffea.compat_0_1_2.names import RECORD_ALIASES
from roastcoffea.errors import DecodeError
from roastcoffea.formats.schema import check_depth, describe, location

#: Longest key of a roastcoffea 0.1.2 file read back as a tuple (its keys are short).
MAX_LEGACY_KEY = 1000


def from_0_1_2(metrics: dict[str, Any], path: Path) -> dict[str, Any]:
    """A metrics dictionary saved by roastcoffea 0.1.2, with the types its JSON lost.

    0.1.2 wrote tuple keys as their ``str()`` and datetimes as ISO strings of
    the recording host's local time (naive). Keys that read back as tuples
    become tuples again; the times of ``tracking_data`` become datetimes, made
    timezone-aware UTC by taking them as this host's local time (as 0.1.2's own
    loader did implicitly). Its chunk records' fields take our names
    (:data:`RECORD_ALIASES`; its metric keys are folded into ours by
    :class:`~roastcoffea.report.notebook.MetricsDict`); its ``total_cpu_time`` was
    coffea's ``processtime``, so it becomes ``total_process_time`` and the CPU
    time is None with that reason (docs/metrics.md, "Differences from
    roastcoffea 0.1.2").
    """
    check_depth(metrics, path)
    restored = _tuple_keys(metrics)
    tracking = restored.get("tracking_data")
    if isinstance(tracking, dict):
        restored["tracking_data"] = _tracking_from_0_1_2(tracking, f"{path}: tracking_data")
    chunks = restored.get("raw_chunk_metrics")
    if isinstance(chunks, list):
        restored["raw_chunk_metrics"] = [_record_under_our_names(c) for c in chunks]
    unavailable = restored.setdefault("unavailable", {})
    if "total_cpu_time" in restored and "total_process_time" not in restored:
        restored["total_process_time"] = restored["total_cpu_time"]
        restored["total_cpu_time"] = None
        unavailable["total_cpu_time"] = (
            "saved by roastcoffea 0.1.2, whose total_cpu_time was coffea's processtime "
            "(now total_process_time); it did not measure CPU time"
        )
    return restored


def _record_under_our_names(record: Any) -> Any:
    """A chunk record with 0.1.2's field names (:data:`RECORD_ALIASES`) made ours."""
    if not isinstance(record, dict):
        return record
    return {RECORD_ALIASES.get(k, k): v for k, v in record.items()}


def _tuple_keys(value: Any) -> Any:
    """``value`` with every dict key written as ``str(tuple)`` made a tuple again."""
    if isinstance(value, dict):
        return {_tuple_key(k): _tuple_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_tuple_keys(item) for item in value]
    return value


def _tuple_key(key: str) -> Any:
    if not (key.startswith("(") and key.endswith(")")) or len(key) > MAX_LEGACY_KEY:
        return key
    try:
        parsed = ast.literal_eval(key)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return key
    return parsed if isinstance(parsed, tuple) else key


def _aware(text: Any, where: str) -> datetime:
    if not isinstance(text, str):
        raise DecodeError(f"{where}: expected an ISO time, found {describe(text)}")
    try:
        return datetime.fromisoformat(text).astimezone(timezone.utc)
    except (ValueError, OverflowError, OSError):
        raise DecodeError(f"{where}: not a readable ISO time") from None


def _tracking_from_0_1_2(tracking: dict[str, Any], where: str) -> dict[str, Any]:
    """0.1.2's worker series with their times made timezone-aware datetimes."""
    out: dict[str, Any] = {}
    for key, series in tracking.items():
        at = f"{where}[{location(key)}]"
        if key == "worker_counts":
            if not isinstance(series, dict):
                raise DecodeError(f"{at}: expected a mapping, found {describe(series)}")
            out[key] = {_aware(t, at): count for t, count in series.items()}
        elif isinstance(series, dict):
            out[key] = {w: _points(points, f"{at}[{location(w)}]") for w, points in series.items()}
        else:
            out[key] = series
    return out


def _points(points: Any, where: str) -> list[tuple[datetime, Any]]:
    if not isinstance(points, list):
        raise DecodeError(f"{where}: expected a list of [time, value], found {describe(points)}")
    out = []
    for i, point in enumerate(points):
        if not (isinstance(point, list) and len(point) == 2):
            raise DecodeError(f"{where}[{i}]: expected a [time, value] pair")
        out.append((_aware(point[0], f"{where}[{i}]"), point[1]))
    return out
