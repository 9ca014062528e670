"""Measurements on disk: save a metrics dictionary, load it back exactly.

A measurement is a directory ``<output_dir>/<name>/`` holding

``metrics.json``
    The metrics dictionary as tagged JSON (:mod:`roastcoffea.formats.tagged_json`):
    tuple keys, tuples, timezone-aware datetimes, NaN and infinities and bytes
    come back as they were. Nothing is pickled.
``chunks.parquet``, ``phases.parquet``
    The chunk records (``raw_chunk_metrics``) and the phase records
    (``raw_phase_records``), one row per chunk or measured task, a column per
    field (:mod:`roastcoffea.formats.parquet`): read them with pandas or pyarrow
    directly. Written when pyarrow is installed and there are records; they
    are then null in ``metrics.json`` and ``metadata.json`` names the files.
``native_state.json``
    The native engine's tables behind the metrics (workers, tasks, digests, spans,
    series; the records are in ``metrics.json``), when the caller gives them:
    JSON state text (``Aggregator.to_json``, ``_native.decode_exit_snapshot``).
``metadata.json``
    Schema version, wall-clock UTC start and end, software versions, the
    cluster's shape and whatever the caller adds.
``start_end_time.txt``
    ``"t0,t1"``: wall-clock epoch seconds (roastcoffea 0.1.2 wrote the same
    file, with ``perf_counter`` values).
``config.json``
    Only when a ``config`` is given.

Loading checks every file against its schema (:mod:`roastcoffea.formats.schema`)
before anything reads it. A directory written by roastcoffea 0.1.2 loads too: its
metrics are plain JSON, restored as 0.1.2 wrote them (string keys).
"""

from __future__ import annotations

import json
import logging
import math
import os
import platform
import re
import stat
import warnings
from collections.abc import Mapping
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import roastcoffea.config as config
from roastcoffea._gc import paused as paused_gc
from roastcoffea.compat_0_1_2.measurements import from_0_1_2
from roastcoffea.compat_0_1_2.names import LEGACY_FORMAT
from roastcoffea.errors import DecodeError
from roastcoffea.formats.schema import check_depth, check_metadata, check_metrics, describe
from roastcoffea.formats.tagged_json import from_tagged_json, to_tagged_json
from roastcoffea.report.notebook import MetricsDict

logger = logging.getLogger(__name__)

#: Version of the measurement layout written by :func:`save_measurement`.
SCHEMA_VERSION = 1
METRICS_FORMAT = "roastcoffea-metrics"
MEASUREMENT_FORMAT = "roastcoffea-measurement"

METRICS_FILE = "metrics.json"
METADATA_FILE = "metadata.json"
TIMES_FILE = "start_end_time.txt"
CONFIG_FILE = "config.json"
NATIVE_STATE_FILE = "native_state.json"
CHUNKS_FILE = "chunks.parquet"
PHASES_FILE = "phases.parquet"
#: The records kept as Parquet: metrics key -> (file, the metadata key naming it).
RECORD_FILES = {
    "raw_chunk_metrics": (CHUNKS_FILE, "chunks_file"),
    "raw_phase_records": (PHASES_FILE, "phases_file"),
}
#: Every file a measurement may hold; an overwrite removes them all first.
FILES = (
    METRICS_FILE,
    CHUNKS_FILE,
    PHASES_FILE,
    METADATA_FILE,
    TIMES_FILE,
    CONFIG_FILE,
    NATIVE_STATE_FILE,
)

#: Packages whose versions ``metadata.json`` records.
VERSIONED_PACKAGES = ("roastcoffea", "dask", "distributed", "coffea", "uproot", "awkward", "numpy")
#: A measurement's name: one path component.
_NAME = re.compile(r"^[^/\\\x00]+$")


def _records_parquet(records: Any) -> bytes | None:
    """Chunk or phase records as Parquet bytes; None without records or without pyarrow."""
    if not isinstance(records, list) or not records:
        return None
    try:
        from roastcoffea.formats.parquet import write_parquet

        return write_parquet(records)
    except ImportError:
        return None
    except Exception as exc:  # a record Arrow cannot hold: it stays in metrics.json
        logger.warning("roastcoffea: records kept in JSON: %s: %s", type(exc).__name__, exc)
        return None


def _write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file, so a crash leaves no half file."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _write_text(path: Path, text: str) -> None:
    _write_bytes(path, text.encode("utf-8"))


def _package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = None
    return versions


def _utc_iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=timezone.utc).isoformat()


def _check_times(t0: Any, t1: Any) -> tuple[float, float]:
    for name, t in (("t0", t0), ("t1", t1)):
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t):
            raise ValueError(f"{name} must be a finite number of epoch seconds, got {t!r}")
        try:  # the metadata states both as UTC dates
            datetime.fromtimestamp(t, tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            raise ValueError(
                f"{name} is {t!r} epoch seconds, not a date this machine can represent"
            ) from None
    if t1 < t0:
        raise ValueError(f"t1 ({t1!r}) is before t0 ({t0!r})")
    return float(t0), float(t1)


def _measurement_dir(output_dir: Path | str, name: str | None) -> Path:
    if name is None:
        name = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H-%M-%S.%fZ")
    if not isinstance(name, str) or not _NAME.match(name) or name in (".", ".."):
        raise ValueError(
            f"measurement_name must be one non-empty path component without '/', got {name!r}"
        )
    return Path(output_dir) / name


def unused_name(output_dir: Path | str, name: str | None) -> str | None:
    """``name`` when no measurement holds it in ``output_dir`` (None stays None: the time
    names it); else the first free ``name-2``, ``name-3``, ..., with a warning that says so."""
    if name is None:
        return None
    candidate, n = name, 1
    while any((Path(output_dir) / candidate / f).exists() for f in FILES):
        n += 1
        candidate = f"{name}-{n}"
    if candidate != name:
        warnings.warn(
            f"measurement {str(Path(output_dir) / name)!r} exists: this run is saved as "
            f"{str(Path(output_dir) / candidate)!r} (overwrite=True replaces it)",
            stacklevel=3,
        )
    return candidate


def measurement_metadata(
    name: str,
    t0: float,
    t1: float,
    *,
    native_file: str | None = None,
    chunks_file: str | None = None,
    phases_file: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``metadata.json`` content of a measurement (also shown by the HTML report).

    Parameters
    ----------
    name : str
        The measurement's name.
    t0, t1 : float
        Wall-clock start and end, seconds since the Unix epoch.
    native_file : str, optional
        Name of the native data file saved with the measurement.
    chunks_file, phases_file : str, optional
        Names of the Parquet files of the chunk and phase records, when they are
        in one.
    extra : mapping, optional
        Entries added after the standard ones (e.g. ``{"cluster": {...}}``).

    Returns
    -------
    dict
        Schema version, name, UTC start and end, elapsed seconds, the time it
        was made, software versions, the native file, then ``extra``.

    Raises
    ------
    ValueError
        For bad times, or ``extra`` keys that would replace standard ones.
    """
    t0, t1 = _check_times(t0, t1)
    meta: dict[str, Any] = {
        "format": MEASUREMENT_FORMAT,
        "schema_version": SCHEMA_VERSION,
        "name": name,
        "start_utc": _utc_iso(t0),
        "end_utc": _utc_iso(t1),
        "t0": t0,
        "t1": t1,
        "elapsed_time_seconds": t1 - t0,
        "saved_utc": datetime.now(timezone.utc).isoformat(),
        "versions": _package_versions(),
        "native_file": native_file,
        "chunks_file": chunks_file,
        "phases_file": phases_file,
    }
    clash = set(extra or ()) & set(meta)
    if clash:
        raise ValueError(f"metadata may not replace {sorted(clash)}")
    meta.update(extra or {})
    return meta


def record_files(directory: Path | None) -> dict[str, str | None]:
    """The Parquet files of records ``directory`` holds, as :func:`measurement_metadata`'s
    ``chunks_file`` and ``phases_file``."""
    return {
        named_by: name if directory is not None and (directory / name).exists() else None
        for name, named_by in RECORD_FILES.values()
    }


def save_measurement(
    metrics: dict[str, Any],
    t0: float,
    t1: float,
    output_dir: Path | str,
    measurement_name: str | None = None,
    config: dict[str, Any] | None = None,
    *,
    native_state: str | None = None,
    metadata: dict[str, Any] | None = None,
    overwrite: bool = False,
) -> Path:
    """Write a measurement directory.

    Parameters
    ----------
    metrics : dict
        The metrics dictionary (e.g. ``MetricsCollector.get_metrics()``).
    t0, t1 : float
        Wall-clock start and end, seconds since the Unix epoch.
    output_dir : path-like
        Parent directory; created if missing.
    measurement_name : str, optional
        Directory name; default the UTC time, ``YYYY-MM-DDTHH-MM-SS.ffffffZ``.
    config : dict, optional
        Written as ``config.json`` (tagged JSON).
    native_state : str, optional
        The native state file text (``native_state.json``).
    metadata : dict, optional
        Extra entries for ``metadata.json`` (e.g. ``{"cluster": {...}}``);
        they may not replace the keys this function writes.
    overwrite : bool, default False
        Replace an existing measurement of the same name.

    Returns
    -------
    pathlib.Path
        The measurement directory.

    Raises
    ------
    FileExistsError
        When the directory already holds a measurement and ``overwrite`` is False.
    TypeError
        When ``metrics`` holds a value that cannot be saved (the message says where).
    ValueError
        For a bad name, bad times, or ``metadata`` keys that clash.
    """
    if not isinstance(metrics, dict):
        raise TypeError(f"metrics must be a dict, not {type(metrics).__name__}")
    t0, t1 = _check_times(t0, t1)
    if native_state is not None and not isinstance(native_state, str):
        raise TypeError(
            f"native_state must be the state file's text, not {type(native_state).__name__}"
        )
    path = _measurement_dir(output_dir, measurement_name)
    existing = [name for name in FILES if (path / name).exists()]
    if existing and not overwrite:
        raise FileExistsError(
            f"measurement {str(path)!r} already exists (holds {', '.join(existing)}); "
            "pass overwrite=True to replace it"
        )
    # Encode everything before touching the disk, so a bad value leaves nothing behind.
    # No indent for the metrics: json's C encoder only writes compact text, and the
    # per-chunk records make this file large.
    parquet = {}
    for key, (name, _) in RECORD_FILES.items():
        data = _records_parquet(metrics.get(key))
        if data is not None:  # their place in metrics.json kept, empty
            parquet[name] = data
            metrics = {**metrics, key: None}
    with paused_gc():
        metrics_text = json.dumps(
            {
                "format": METRICS_FORMAT,
                "version": SCHEMA_VERSION,
                "metrics": to_tagged_json(metrics),
            },
            allow_nan=False,
        )
    native_file = None
    if native_state is not None:
        native_file = NATIVE_STATE_FILE
    meta = measurement_metadata(
        path.name,
        t0,
        t1,
        native_file=native_file,
        chunks_file=CHUNKS_FILE if CHUNKS_FILE in parquet else None,
        phases_file=PHASES_FILE if PHASES_FILE in parquet else None,
        extra=metadata,
    )
    meta_text = json.dumps(to_tagged_json(meta), allow_nan=False, indent=1)
    config_text = None
    if config is not None:
        config_text = json.dumps(to_tagged_json(config), allow_nan=False, indent=1)

    path.mkdir(parents=True, exist_ok=True)
    for name in existing:
        (path / name).unlink()
    _write_text(path / METRICS_FILE, metrics_text)
    for name, data in parquet.items():
        _write_bytes(path / name, data)
    if native_state is not None:
        _write_text(path / NATIVE_STATE_FILE, native_state)
    if config_text is not None:
        _write_text(path / CONFIG_FILE, config_text)
    _write_text(path / TIMES_FILE, f"{t0!r},{t1!r}\n")
    # metadata.json last: its presence marks a complete measurement.
    _write_text(path / METADATA_FILE, meta_text)
    return path


def read_member(directory: Path, name: str) -> bytes:
    """The bytes of the file ``name`` of a measurement, read within the size limit.

    Refused (DecodeError): a file that resolves outside the measurement directory
    (a symlink pointing elsewhere), one that is not a regular file (a FIFO, a
    device), and one larger than the setting ``roastcoffea.max-measurement-bytes``,
    checked before anything is read.
    """
    path = directory / name
    if not path.exists() and not path.is_symlink():
        raise FileNotFoundError(f"{path}: missing (not a complete roastcoffea measurement)")
    resolved = path.resolve()
    if not resolved.is_relative_to(directory.resolve()):
        raise DecodeError(f"{path}: refused: it resolves outside the measurement directory")
    limit = int(config.byte_count("max-measurement-bytes"))
    try:
        fd = os.open(resolved, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise DecodeError(f"{path}: cannot be opened ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise DecodeError(f"{path}: not a regular file")
        if info.st_size > limit:
            raise DecodeError(
                f"{path}: {info.st_size} bytes, above the limit of {limit} "
                "(setting roastcoffea.max-measurement-bytes)"
            )
        # What fstat says, and one byte more to see a file that grew meanwhile.
        data = file.read(info.st_size + 1)
    if len(data) > info.st_size:
        raise DecodeError(f"{path}: changed while it was read")
    return data


def _read_json(directory: Path, name: str) -> Any:
    path = directory / name
    data = read_member(directory, name)
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise DecodeError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise DecodeError(f"{path}: truncated or not JSON (line {exc.lineno})") from None
    except ValueError:  # an integer of more digits than Python converts
        raise DecodeError(f"{path}: a number too long to read") from None
    except RecursionError:
        raise DecodeError(f"{path}: JSON nested too deeply to read") from None


def _read_times(directory: Path) -> tuple[float, float]:
    path = directory / TIMES_FILE
    text = read_member(directory, TIMES_FILE).decode("utf-8", errors="replace").strip()
    parts = text.split(",")
    try:
        if len(parts) != 2:
            raise DecodeError
        t0, t1 = float(parts[0]), float(parts[1])
    except ValueError:
        raise DecodeError(f"{path}: invalid timing format, expected 't0,t1'") from None
    if not (math.isfinite(t0) and math.isfinite(t1)):
        raise DecodeError(f"{path}: the times are not finite numbers")
    return t0, t1


def _check_format(path: Path, data: Any, expected: str, version_key: str) -> None:
    found = data.get("format") if isinstance(data, dict) else None
    if found != expected:
        raise DecodeError(f"{path}: not a roastcoffea file (its format is not {expected!r})")
    got = data.get(version_key)
    if isinstance(got, bool) or not isinstance(got, int) or got < 1:
        raise DecodeError(
            f"{path}: {version_key} missing or not a positive integer ({describe(got)})"
        )
    if got > SCHEMA_VERSION:
        raise DecodeError(
            f"{path}: written by a newer roastcoffea ({version_key} {got}); "
            f"this one reads up to {SCHEMA_VERSION}"
        )


def _load_metadata(directory: Path) -> dict[str, Any]:
    path = directory / METADATA_FILE
    data = _read_json(directory, METADATA_FILE)
    if isinstance(data, dict) and data.get("format") == LEGACY_FORMAT:
        check_depth(data, path)
        check_metadata({k: v for k, v in data.items() if k not in ("t0", "t1")}, str(path))
        return data
    _check_format(path, data, MEASUREMENT_FORMAT, "schema_version")
    try:
        metadata = from_tagged_json(data)
    except ValueError as exc:
        raise DecodeError(f"{path}: {exc}") from None
    check_metadata(metadata, str(path))
    return metadata


def load_metadata(measurement_path: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``metadata.json`` of a measurement, checked.

    Raises
    ------
    FileNotFoundError, ValueError
        As :func:`load_measurement`.
    """
    return _load_metadata(_existing_dir(measurement_path))


def _existing_dir(measurement_path: str | os.PathLike[str]) -> Path:
    directory = Path(measurement_path)
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory}: measurement directory not found")
    return directory


def load_measurement(
    measurement_path: str | os.PathLike[str],
) -> tuple[dict[str, Any], float, float]:
    """Read a measurement written by :func:`save_measurement` (or by roastcoffea 0.1.2).

    Parameters
    ----------
    measurement_path : path-like
        The measurement directory.

    Returns
    -------
    tuple
        ``(metrics, t0, t1)``: the metrics dictionary restored exactly (tuple
        keys, tuples, datetimes, NaN, bytes), and the wall-clock start and end
        in epoch seconds (``perf_counter`` values for a 0.1.2 measurement).

    Raises
    ------
    FileNotFoundError
        When the directory or one of its files is missing (the message names it).
    ValueError
        When a file is truncated, not ours, from a newer schema, or malformed
        (the message names the file and the problem).
    """
    directory = _existing_dir(measurement_path)
    metadata = _load_metadata(directory)
    t0, t1 = _read_times(directory)
    path = directory / METRICS_FILE
    with paused_gc():
        data = _read_json(directory, METRICS_FILE)
    if metadata.get("format") == LEGACY_FORMAT:
        if not isinstance(data, dict):
            raise DecodeError(f"{path}: expected a JSON object of metrics")
        metrics = from_0_1_2(data, path)
        check_metrics(metrics, str(path))
        return MetricsDict(metrics), t0, t1
    _check_format(path, data, METRICS_FORMAT, "version")
    if not isinstance(data.get("metrics"), dict):
        raise DecodeError(f"{path}: 'metrics' missing or not an object")
    try:
        with paused_gc():
            metrics = from_tagged_json(data["metrics"])
    except ValueError as exc:
        raise DecodeError(f"{path}: {exc}") from None
    files = {}
    for key, (name, named_by) in RECORD_FILES.items():
        if metadata.get(named_by) == name and metrics.get(key) is None:
            metrics[key] = _read_records(directory, name)
            files[key] = str(directory / name)
    check_metrics(metrics, str(path), files)
    if (metadata.get("t0"), metadata.get("t1")) != (t0, t1):
        raise DecodeError(
            f"{directory / TIMES_FILE}: times {t0!r},{t1!r} disagree with "
            f"{METADATA_FILE} ({metadata.get('t0')!r},{metadata.get('t1')!r})"
        )
    return MetricsDict(metrics), t0, t1


def _read_records(directory: Path, name: str) -> list[dict[str, Any]]:
    """The records of the Parquet file ``name``."""
    path = directory / name
    data = read_member(directory, name)
    from roastcoffea.formats.parquet import read_parquet
    from roastcoffea.formats.parquet_bounds import Refused

    try:
        with paused_gc():
            return read_parquet(data, int(config.byte_count("max-records-bytes")))
    except Refused as exc:
        raise DecodeError(f"{path}: {exc}") from None
    except ImportError:
        raise DecodeError(
            f"{path}: reading the records needs pyarrow: pip install 'roastcoffea[plot]'"
        ) from None
    except Exception as exc:  # whatever a damaged file makes Arrow raise, on one line
        said = " ".join(str(exc).split())
        raise DecodeError(f"{path}: not a file of records: {type(exc).__name__}: {said}") from None


def load_native(measurement_path: Path | str) -> dict[str, Any] | None:
    """The native data saved with a measurement, decoded; None when none was saved.

    ``native_state.json`` is read with ``roastcoffea._native.state_from_json``.

    Raises
    ------
    FileNotFoundError
        When ``metadata.json`` names a native file that is missing.
    ValueError
        When the native file is malformed (the message names it).
    """
    from roastcoffea._native import state_from_json

    directory = _existing_dir(measurement_path)
    name = _load_metadata(directory).get("native_file")
    if name is None:
        return None
    if name != NATIVE_STATE_FILE:
        raise DecodeError(f"{directory / METADATA_FILE}: native_file names no file of ours")
    path = directory / name
    if not path.exists():
        raise FileNotFoundError(f"{path}: missing (named by {METADATA_FILE})")
    data = read_member(directory, name)
    try:
        return state_from_json(data)
    except ValueError as exc:
        raise DecodeError(f"{path}: {exc}") from None
