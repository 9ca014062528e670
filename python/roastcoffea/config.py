"""roastcoffea's settings in ``dask.config``, under ``roastcoffea.*``.

The defaults live in ``roastcoffea.yaml`` next to this module and are added to
Dask's defaults on import, as distributed does with its own file; a user
overrides them as any Dask setting (YAML files, ``DASK_ROASTCOFFEA__*``
environment variables, ``dask.config.set``). An argument given in code wins.

A setting is read with its packaged default as the fallback: code that resets
``dask.config`` to a snapshot taken before roastcoffea was imported (distributed's
``gen_cluster`` does, for every test) still reads the defaults.
"""

from __future__ import annotations

import math
from importlib.resources import files
from typing import Any

import dask.config
import yaml
from dask.utils import parse_bytes, parse_timedelta

#: The packaged defaults (``roastcoffea.yaml``), as read at import.
DEFAULTS: dict[str, Any] = yaml.safe_load(
    (files("roastcoffea") / "roastcoffea.yaml").read_text(encoding="utf-8")
)
dask.config.update_defaults(DEFAULTS)


def setting(name: str, given: Any = None) -> Any:
    """``given`` when it is not None, else the setting ``roastcoffea.<name>``, else its
    packaged default.

    Raises
    ------
    KeyError
        For a name that is no setting of roastcoffea's.
    """
    if given is not None:
        return given
    return dask.config.get(f"roastcoffea.{name}", default=DEFAULTS["roastcoffea"][name])


def seconds(name: str, given: Any = None) -> Any:
    """``given``, else the duration setting in seconds (``"10s"``, ``"500ms"``, a number).

    What is given is returned as is, for the caller's own checks.
    """
    value = setting(name, given)
    return parse_timedelta(value) if given is None and isinstance(value, str) else value


def byte_count(name: str, given: Any = None) -> Any:
    """``given``, else the size setting in bytes (``"64MiB"``, an int)."""
    value = setting(name, given)
    return parse_bytes(value) if given is None and isinstance(value, str) else value


# ---- checks of the values of settings and arguments ----------------------------------

#: Smallest series store the native layer accepts.
MIN_SERIES_CAP_BYTES = 64 << 10
#: Largest ring the native layer accepts.
MAX_RING_CAPACITY = 1 << 30
#: Bounds of the sampler interval, in seconds.
MIN_INTERVAL = 0.01
MAX_INTERVAL = 3600.0


def whole_number(name: str, value: Any, low: int, high: int | None = None) -> int:
    """``value`` as a setting's int, between ``low`` and ``high``.

    Raises
    ------
    TypeError
        For a value that is not an int.
    ValueError
        For an int outside the bounds.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return value


def check_interval(value: Any, name: str = "interval") -> float:
    """A sampler interval in seconds, between :data:`MIN_INTERVAL` and :data:`MAX_INTERVAL`.

    Raises
    ------
    TypeError
        For a value that is not a number.
    ValueError
        For a number outside the bounds (a longer interval would hold back
        every worker payload for longer than any run needs).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, not {type(value).__name__}")
    if not (MIN_INTERVAL <= value <= MAX_INTERVAL):
        raise ValueError(
            f"{name} must be a number of seconds in [{MIN_INTERVAL}, {MAX_INTERVAL}], got {value!r}"
        )
    return float(value)


def check_phase_cpu_interval(value: Any) -> float:
    """Seconds between the phase clock's CPU clock reads: a finite number >= 0.

    Raises
    ------
    TypeError
        For a value that is not a number.
    ValueError
        For a negative or infinite number.
    """
    name = "phase_cpu_interval"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, not {type(value).__name__}")
    if not (0.0 <= value < math.inf):
        raise ValueError(f"{name} must be a finite number of seconds >= 0, got {value!r}")
    return float(value)
