"""Every function and method of roastcoffea._native says its signature, as Python's do.

msgspec's way: a C function's docstring opens with ``name(signature)\\n--\\n\\n``, so
``inspect.signature``, ``help()`` and the API reference read its parameters; the stub
(``_native.pyi``) declares the same ones, which ``make lint`` checks with
``mypy.stubtest``.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import pytest

import roastcoffea._native as native

#: Methods CPython gives every type, whose signatures are CPython's own.
INHERITED = {"__reduce__", "__reduce_ex__", "__init_subclass__", "__subclasshook__", "__dir__"}


def callables() -> Iterator[tuple[str, Any]]:
    for name, value in vars(native).items():
        if name.startswith("_") or not callable(value) or value is native.DecodeError:
            continue  # DecodeError is roastcoffea.errors', in Python
        yield name, value
        if isinstance(value, type):
            for attr, method in vars(value).items():
                if callable(method) and not attr.startswith("_") and attr not in INHERITED:
                    yield f"{name}.{attr}", method


def test_the_extension_has_functions_and_types() -> None:
    names = dict(callables())
    assert {"key_split", "Aggregator", "Aggregator.snapshot", "TaskPhases.enter"} <= set(names)


@pytest.mark.parametrize(("name", "value"), list(callables()), ids=lambda v: str(v)[:40])
def test_each_one_has_a_text_signature(name: str, value: Any) -> None:
    assert getattr(value, "__text_signature__", None), name
    signature = inspect.signature(value, follow_wrapped=False)
    assert all(p.name.isidentifier() for p in signature.parameters.values()), name


def test_the_signatures_are_the_calls_they_accept() -> None:
    assert str(inspect.signature(native.key_split)) == "(key, /)"
    aggregator = inspect.signature(native.Aggregator)
    assert aggregator.parameters["ring_capacity"].default == 131072
    assert aggregator.parameters["series_cap_bytes"].default == 64 << 20
    assert all(p.kind is p.KEYWORD_ONLY for p in aggregator.parameters.values())
    snapshot = inspect.signature(native.Aggregator.snapshot)
    assert list(snapshot.parameters) == ["self", "spans", "t_from", "t_to", "now"]
    with pytest.raises(TypeError):
        native.Aggregator(131072)  # type: ignore[misc]
    tracker = native.DigestTracker("w", window=3, followed=())
    assert tracker.window == 3
