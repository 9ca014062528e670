"""Numbers as text, and the unit of an axis: one rule for the summary, report, compare and figures.

- Bytes in binary units as Dask writes them (:func:`dask.utils.format_bytes`:
  B, kiB, MiB, GiB, TiB, PiB), byte rates in the same units per second
  (``MiB/s``). The data rate's headline figure is in decimal bits per second
  (kept in Gbps, roastcoffea 0.1.2's key; written in Gbps, Mbps or kbps as its
  magnitude calls for), with its byte rate beside it.
- Durations as Dask writes them (:func:`dask.utils.format_time`: us, ms, s,
  then minutes and hours).
- Event rates in Hz, kHz, MHz as their magnitude calls for.
- Counts as whole numbers with thousands separators; other numbers to four
  significant figures, never in exponent notation.
- Shares with one decimal and ``%``; ratios with two decimals and ``x``.

So a report reads like Dask's dashboard. Every function accepts negative
values (differences), which Dask's own functions do not.
"""

from __future__ import annotations

import math

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
    return _in_unit(float(hertz), RATE_UNITS, "Hz", per)


def _in_unit(value: float, units: tuple[tuple[str, float], ...], base: str, per: str = "") -> str:
    """``value`` in the first of ``units`` (largest first) it reaches, else in ``base``."""
    for name, size in units:
        if abs(value) >= size:
            return f"{value / size:,.2f} {name}{per}"
    return f"{value:,.2f} {base}{per}"


#: Decimal bit-rate units, largest first.
BIT_RATE_UNITS = (("Tbps", 1e12), ("Gbps", 1e9), ("Mbps", 1e6), ("kbps", 1e3))


def format_bit_rate(bits_per_second: float) -> str:
    """A data rate in the decimal bit unit its magnitude calls for: ``"28.06 Mbps"``.

    The metric stays in Gbps (``overall_rate_gbps``, 0.1.2's key); its text never
    reads as "0.000 Gbps".
    """
    return _in_unit(float(bits_per_second), BIT_RATE_UNITS, "bps")


def format_gbps(gbps: float) -> str:
    """A data rate given in Gbps (``overall_rate_gbps``), written as :func:`format_bit_rate`."""
    return format_bit_rate(1e9 * float(gbps))


def byte_unit(peak: float) -> tuple[float, str]:
    """The unit :func:`format_bytes` would write ``peak`` in: ``(divisor, name)``."""
    for name, size in BYTE_UNITS:
        if abs(peak) >= size * 0.9:
            return float(size), name
    return 1.0, "B"


def format_byte_rate(bytes_per_second: float) -> str:
    """A byte rate in binary units: ``"14.10 MiB/s"``."""
    return f"{format_bytes(bytes_per_second)}/s"


def format_number(value: float, significant: int = 4) -> str:
    """A plain number: whole with separators (``"233,662"``), else ``significant`` figures.

    Never in exponent notation: ``2e+06`` is written ``2,000,000`` and
    ``0.000123`` is ``0.000123``, ``0.5`` is ``0.5``.
    """
    value = float(value)
    if not math.isfinite(value):
        return str(value)
    if value.is_integer():
        return f"{int(value):,}"
    digits = max(0, significant - 1 - math.floor(math.log10(abs(value))))
    text = f"{value:,.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def format_percent(value: float) -> str:
    """A share given in percent: ``"12.3%"``."""
    return f"{float(value):.1f}%"


def units_word(unit: str) -> str:
    """The plural of a storage unit in a message: ``basket`` (a TTree's) gives ``baskets``,
    ``page`` (an RNTuple's) ``pages``, ``basket or page`` ``baskets or pages``."""
    return " or ".join(part + "s" for part in unit.split(" or "))
