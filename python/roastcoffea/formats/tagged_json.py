"""Tagged JSON: JSON for the values JSON lacks, read back exactly, nothing pickled.

Values JSON lacks are written as one-key objects: ``{"$tuple": [...]}``,
``{"$set": [...]}``, ``{"$dict": [[key, value], ...]}`` for a dict whose keys are
not all plain strings, ``{"$float": "nan"}`` (and ``"-nan"``, ``"inf"``,
``"-inf"``), ``{"$datetime": "..."}``, ``{"$date": "..."}``, ``{"$timedelta": [days,
seconds, microseconds]}``, ``{"$bytes": "<base64>"}``. So tuple keys, tuples,
timezone-aware datetimes, NaN and infinities and bytes come back as they were. The
decoder treats its input as hostile: nesting is bounded, tags are checked, and every
error names where it is.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping
from datetime import date, datetime, timedelta
from typing import Any

from roastcoffea.errors import DecodeError
from roastcoffea.formats.schema import MAX_DEPTH, describe, location

_TAG = "$"
#: The tags of tagged JSON.
TAGS = ("$tuple", "$set", "$dict", "$float", "$datetime", "$date", "$timedelta", "$bytes")
#: Longest text of a $datetime, $date or $bytes tag that is decoded.
MAX_TAG_TEXT = 1 << 24


def _encode_float(value: float) -> Any:
    if math.isfinite(value):
        return value
    if math.isnan(value):
        return {"$float": "-nan" if math.copysign(1.0, value) < 0 else "nan"}
    return {"$float": "inf" if value > 0 else "-inf"}


def _encode(value: Any, where: str, path: tuple[int, ...] = ()) -> Any:
    """``value`` as JSON-ready data; TypeError naming ``where`` for what cannot be saved.

    ``path`` holds the ids of the containers being encoded around ``value``:
    a container met again inside itself is a cycle (ValueError), and so is
    nesting deeper than :data:`MAX_DEPTH`.
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return _encode_float(float(value))
    if isinstance(value, (Mapping, list, tuple, set, frozenset)):
        if id(value) in path:
            raise ValueError(f"{where}: the value contains itself")
        if len(path) >= MAX_DEPTH:
            raise ValueError(f"{where}: nested deeper than {MAX_DEPTH} levels")
        path = (*path, id(value))
    if isinstance(value, Mapping):
        return _encode_dict(value, where, path)
    if isinstance(value, list):
        return [_encode(v, f"{where}[{i}]", path) for i, v in enumerate(value)]
    if isinstance(value, tuple):
        return {"$tuple": [_encode(v, f"{where}[{i}]", path) for i, v in enumerate(value)]}
    if isinstance(value, (set, frozenset)):
        return {"$set": [_encode(v, f"{where}{{}}", path) for v in value]}
    if isinstance(value, datetime):
        return {"$datetime": value.isoformat()}
    if isinstance(value, date):
        return {"$date": value.isoformat()}
    if isinstance(value, timedelta):
        return {"$timedelta": [value.days, value.seconds, value.microseconds]}
    if isinstance(value, (bytes, bytearray)):
        return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}
    # numpy scalars and arrays without importing numpy.
    if hasattr(value, "tolist") and hasattr(value, "dtype"):
        return _encode(value.tolist(), where, path)
    raise TypeError(f"{where}: cannot save a value of type {type(value).__name__}")


def _encode_dict(value: Mapping, where: str, path: tuple[int, ...]) -> Any:
    plain = all(isinstance(k, str) and not k.startswith(_TAG) for k in value)
    if plain:
        return {k: _encode(v, f"{where}[{k!r}]", path) for k, v in value.items()}
    return {
        "$dict": [
            [_encode(k, f"{where} key {k!r}", path), _encode(v, f"{where}[{k!r}]", path)]
            for k, v in value.items()
        ]
    }


def _hashable(value: Any, where: str) -> Any:
    try:
        hash(value)
    except TypeError:
        raise DecodeError(f"{where}: a dict key or set item is unhashable") from None
    return value


def _decode_float(text: Any, where: str) -> float:
    floats = {"nan": math.nan, "-nan": -math.nan, "inf": math.inf, "-inf": -math.inf}
    if not isinstance(text, str) or text not in floats:
        raise DecodeError(f"{where}: a $float tag holding {describe(text)}, not nan or inf")
    return floats[text]


def _decode_tag(tag: str, body: Any, where: str, depth: int) -> Any:
    if tag == "$tuple" and isinstance(body, list):
        return tuple(_decode(v, f"{where}[{i}]", depth) for i, v in enumerate(body))
    if (
        tag in ("$datetime", "$date", "$bytes")
        and isinstance(body, str)
        and len(body) > MAX_TAG_TEXT
    ):
        raise DecodeError(f"{where}: a {tag} tag of {len(body)} characters")
    if tag == "$set" and isinstance(body, list):
        return {_hashable(_decode(v, where, depth), where) for v in body}
    if tag == "$dict" and isinstance(body, list):
        out = {}
        for i, pair in enumerate(body):
            if not (isinstance(pair, list) and len(pair) == 2):
                raise DecodeError(f"{where}[{i}]: expected a [key, value] pair")
            key = _hashable(_decode(pair[0], f"{where}[{i}]", depth), f"{where}[{i}]")
            out[key] = _decode(pair[1], f"{where}[{location(key)}]", depth)
        return out
    if tag == "$float":
        return _decode_float(body, where)
    try:  # OverflowError: a timedelta or date beyond Python's range
        if tag == "$datetime" and isinstance(body, str):
            return datetime.fromisoformat(body)
        if tag == "$date" and isinstance(body, str):
            return date.fromisoformat(body)
        if tag == "$timedelta" and isinstance(body, list) and len(body) == 3:
            return timedelta(days=body[0], seconds=body[1], microseconds=body[2])
        if tag == "$bytes" and isinstance(body, str):
            return base64.b64decode(body.encode("ascii"), validate=True)
    except (ValueError, TypeError, OverflowError):
        raise DecodeError(f"{where}: a {tag} tag holding no valid value") from None
    shown = tag if tag in TAGS else "$-tag"
    raise DecodeError(f"{where}: unknown or malformed {shown} holding {describe(body)}")


def _decode(value: Any, where: str, depth: int = 0) -> Any:
    if isinstance(value, (list, dict)) and depth >= MAX_DEPTH:
        raise DecodeError(f"{where}: nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, list):
        return [_decode(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]
    if isinstance(value, dict):
        if len(value) == 1:
            ((key, body),) = value.items()
            if key.startswith(_TAG):
                return _decode_tag(key, body, where, depth + 1)
        return {k: _decode(v, f"{where}[{location(k)}]", depth + 1) for k, v in value.items()}
    return value


def to_tagged_json(value: Any) -> Any:
    """``value`` as JSON-ready data, with the tags of this module.

    Parameters
    ----------
    value : Any
        Dicts (any hashable keys), lists, tuples, sets, str, int, float (NaN and
        infinities included), bool, None, bytes, datetime, date, timedelta, and
        numpy scalars or arrays (saved as numbers and lists).

    Returns
    -------
    Any
        Data ``json.dumps`` accepts with ``allow_nan=False``.

    Raises
    ------
    TypeError
        For a value of another type, naming where it is.
    """
    return _encode(value, "metrics")


def from_tagged_json(data: Any) -> Any:
    """Inverse of :func:`to_tagged_json`.

    Raises
    ------
    ValueError
        For an unknown or malformed tag, naming where it is.
    """
    return _decode(data, "metrics")
