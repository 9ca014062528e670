"""The metrics dictionary under construction, and the statistics every group uses.

A metric that cannot be measured is ``None`` and its reason is kept in
``unavailable``; a metric computed from others inherits the reason of the first
one missing, so the user sees why at the root.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any, TypeGuard


class Unavailable(Exception):
    """Raised by a formula whose inputs do not allow a value; the message is the reason."""


class Metrics:
    """The metrics dictionary being built, with the reason of every missing value.

    Groups run in order and may read the values of the groups before them.
    """

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.unavailable: dict[str, str] = {}

    def put(self, key: str, value: Any) -> None:
        """Set a measured value (``None`` is refused: use :meth:`missing`)."""
        if value is None:
            raise ValueError(f"{key}: None needs a reason, use missing()")
        self.values[key] = value
        self.unavailable.pop(key, None)

    def missing(self, key: str, reason: str) -> None:
        """Set ``key`` to None because it cannot be measured, and say why."""
        self.values[key] = None
        self.unavailable[key] = reason

    def get(self, key: str) -> Any:
        """The value of ``key`` (None when missing or not computed)."""
        return self.values.get(key)

    def derive(self, key: str, formula: Callable[..., Any], *inputs: str) -> None:
        """Set ``key`` to ``formula(*values of inputs)``.

        When an input is missing, ``key`` is missing with that input's reason;
        when the formula raises :class:`Unavailable`, with its message.
        """
        for name in inputs:
            if self.values.get(name) is None:
                why = self.unavailable.get(name, "not computed")
                self.missing(key, f"needs {name}: {why}")
                return
        try:
            self.put(key, formula(*(self.values[name] for name in inputs)))
        except Unavailable as reason:
            self.missing(key, str(reason))

    def result(self) -> dict[str, Any]:
        """The metrics dictionary, with ``"unavailable"``: {key: reason}."""
        return {**self.values, "unavailable": dict(sorted(self.unavailable.items()))}


def divide(numerator: float, denominator: float, what: str) -> float:
    """``numerator / denominator``; :class:`Unavailable` naming ``what`` when it is 0."""
    if denominator == 0:
        raise Unavailable(f"{what} is 0")
    return numerator / denominator


def is_number(value: Any) -> TypeGuard[float]:
    """Whether ``value`` is a real finite number (bools are not numbers here)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def describe(values: Iterable[float]) -> dict[str, float | int | None] | None:
    """Count, total, mean, min, max and sample standard deviation of ``values``.

    Returns None for no values. The total of integers is an exact integer, of
    other numbers a :func:`math.fsum`; min and max keep the values' type.
    ``std`` is the sample standard deviation (n - 1 in the denominator) and
    None for a single value, which has no spread to estimate.
    """
    data = list(values)
    if not data:
        return None
    count = len(data)
    total = sum(data) if all(isinstance(v, int) for v in data) else math.fsum(data)
    mean = total / count
    std = None
    if count > 1:
        std = math.sqrt(math.fsum((v - mean) ** 2 for v in data) / (count - 1))
    return {
        "count": count,
        "total": total,
        "mean": mean,
        "min": min(data),
        "max": max(data),
        "std": std,
    }


def put_stats(
    out: Metrics,
    values: list[float],
    keys: dict[str, str],
    reason: str,
) -> None:
    """Put chosen statistics of ``values`` under the given keys.

    ``keys`` maps a statistic name of :func:`describe` to the metric key; with
    no values every key is missing with ``reason``. A std of a single value is
    missing with its own reason.
    """
    stats = describe(values)
    for stat, key in keys.items():
        if stats is None:
            out.missing(key, reason)
        elif stats[stat] is None:
            out.missing(key, "the sample standard deviation needs at least 2 values")
        else:
            out.put(key, stats[stat])


def lacking(records: list[dict[str, Any]], field: str) -> str | None:
    """Why some chunk records have no number in ``field``, or None when all have one.

    The message counts them and quotes the first record's own reason
    (``record["unavailable"][field]``), when it gives one.
    """
    without = [r for r in records if not is_number(r.get(field))]
    if not without:
        return None
    message = f"{len(without)} of {len(records)} chunk records lack {field!r}"
    for record in without:
        reason = (record.get("unavailable") or {}).get(field)
        if reason:
            return f"{message} ({reason})"
    return message


def put_sums(out: Metrics, records: list[dict[str, Any]], sums: dict[str, str]) -> None:
    """Put ``key = Σ record[field]`` for each ``key: field`` of ``sums``.

    A key is missing, with :func:`lacking`'s reason, when a record has no number
    in its field: a partial sum would mislead.
    """
    for key, field in sums.items():
        reason = lacking(records, field)
        if reason:
            out.missing(key, reason)
        else:
            out.put(key, sum(r[field] for r in records))


def storage_unit(records: list[dict[str, Any]]) -> str:
    """``"basket"``, ``"page"``, or ``"basket or page"`` when the records mix TTrees and
    RNTuples; a record without the field (an older record) read a TTree."""
    units = sorted({r.get("storage_unit") or "basket" for r in records})
    return " or ".join(units) if units else "basket"


def finite_or_none(value: float) -> float | None:
    """``value`` as a float, or None when it is NaN or infinite (not reported)."""
    value = float(value)
    return value if math.isfinite(value) else None
