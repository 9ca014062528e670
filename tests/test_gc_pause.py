"""The garbage collector is paused for a bulk decode and left as it was found."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from roastcoffea._gc import paused


@pytest.fixture
def gc_state() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    (gc.enable if enabled else gc.disable)()


@pytest.mark.usefixtures("gc_state")
def test_paused_inside_and_enabled_after_even_on_error() -> None:
    gc.enable()
    with paused():
        assert not gc.isenabled()
        with paused():  # nested: the outer block still owns the pause
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(KeyError), paused():
        raise KeyError("boom")
    assert gc.isenabled()


@pytest.mark.usefixtures("gc_state")
def test_a_collector_disabled_by_the_user_stays_disabled() -> None:
    gc.disable()
    with paused():
        assert not gc.isenabled()
    assert not gc.isenabled()
