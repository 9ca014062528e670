"""Bytes, durations and rates as text, and the unit of a byte axis: one style everywhere.

Binary byte units as Dask writes them (:func:`dask.utils.format_bytes`: B, kiB,
MiB, GiB, TiB, PiB) and Dask's durations (:func:`dask.utils.format_time`: us,
ms, s, then minutes and hours), so a report reads like Dask's dashboard. Both
accept negative values (differences), which Dask's own functions do not.
"""

from __future__ import annotations

from dask.utils import format_bytes as _dask_bytes
from dask.utils import format_time as _dask_time

#: Binary byte units, largest first, as :func:`dask.utils.format_bytes` names them.
BYTE_UNITS = (("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("kiB", 2**10))


def format_bytes(value: float) -> str:
    """Bytes with a binary unit, e.g. ``"1.50 kiB"`` (Dask's style; rounded to whole bytes)."""
    value = float(value)
    sign = "-" if value < 0 else ""
    return sign + _dask_bytes(round(abs(value)))


def format_time(seconds: float) -> str:
    """A duration, e.g. ``"7.50 s"``, ``"500.00 ms"``, ``"59m 59s"`` (Dask's style); ``"0 s"``."""
    seconds = float(seconds)
    if seconds == 0:
        return "0 s"  # Dask writes "0.00 us", which reads as a rounded tiny value
    sign = "-" if seconds < 0 else ""
    return sign + _dask_time(abs(seconds))


#: Decimal rate units, largest first.
RATE_UNITS = (("GHz", 1e9), ("MHz", 1e6), ("kHz", 1e3))


def format_rate(hertz: float, per: str = "") -> str:
    """A rate in the unit its magnitude calls for: ``"62.50 Hz"``, ``"584.18 kHz"``, ``"1.88 MHz"``.

    ``per`` is appended to the unit (``"/core"``), so a small run reads in Hz,
    never as "0.00 kHz".
    """
    hertz = float(hertz)
    for name, size in RATE_UNITS:
        if abs(hertz) >= size:
            return f"{hertz / size:,.2f} {name}{per}"
    return f"{hertz:,.2f} Hz{per}"


def byte_unit(peak: float) -> tuple[float, str]:
    """The unit :func:`format_bytes` would write ``peak`` in: ``(divisor, name)``."""
    for name, size in BYTE_UNITS:
        if abs(peak) >= size * 0.9:
            return float(size), name
    return 1.0, "B"
