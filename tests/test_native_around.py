"""Around: a function called between two others, with no Python frame of its own."""

from __future__ import annotations

import functools
import gc
import pickle
import sys
import weakref
from typing import Any

import pytest

from roastcoffea._native import Around

CALLS: list[tuple] = []


def add(x: int, y: int = 1) -> int:
    """Adds."""
    return x + y


def enter(*args: Any, **kwargs: Any) -> str:
    CALLS.append(("enter", args, kwargs))
    return "state"


def leave(state: Any, error: BaseException | None) -> None:
    CALLS.append(("leave", state, error))


def unmeasured(*args: Any, **kwargs: Any) -> None:
    return None


def failing(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("bookkeeping failed")


@pytest.fixture(autouse=True)
def fresh_calls() -> None:
    CALLS.clear()


def test_func_runs_between_enter_and_leave_with_the_call_s_arguments() -> None:
    assert Around(add, enter, leave)(2, y=3) == 5
    assert CALLS == [("enter", (2,), {"y": 3}), ("leave", "state", None)]


def test_without_a_state_func_runs_alone() -> None:
    assert Around(add, unmeasured, leave)(2) == 3
    assert CALLS == []


def test_func_s_exception_reaches_leave_and_the_caller_unchanged() -> None:
    def fails() -> None:
        raise ZeroDivisionError("raised by func")

    with pytest.raises(ZeroDivisionError, match="raised by func") as caught:
        Around(fails, enter, leave)()
    (_, (_, state, error)) = CALLS
    assert state == "state" and error is caught.value
    assert caught.traceback[-1].name == "fails"  # the traceback reaches into func


def test_a_failing_enter_or_leave_never_changes_the_call_s_outcome() -> None:
    assert Around(add, failing, leave)(1) == 2  # unmeasured, not failed
    assert Around(add, enter, failing)(1) == 2
    with pytest.raises(KeyError):
        Around({}.__getitem__, enter, failing)("missing")
    assert sys.exc_info() == (None, None, None)


def test_it_leaves_no_frame_of_its_own_on_the_stack() -> None:
    caller = sys._getframe()

    def called() -> Any:
        return sys._getframe(1)

    assert Around(called, enter, leave)() is caller


def test_it_binds_like_the_method_it_replaces() -> None:
    class Doubler:
        def double(self, x: int) -> int:
            return 2 * x

        wrapped = Around(double, enter, leave)

    doubler = Doubler()
    assert doubler.wrapped(4) == 8
    assert CALLS[0] == ("enter", (doubler, 4), {})
    assert Doubler.wrapped.func is Doubler.double


def test_update_wrapper_metadata_and_pickling_keep_the_function() -> None:
    wrapped = functools.update_wrapper(Around(add, enter, leave), add)
    assert (wrapped.__name__, wrapped.__doc__, wrapped.__wrapped__) == ("add", "Adds.", add)
    copy = pickle.loads(pickle.dumps(wrapped))
    assert (copy.func, copy.enter, copy.leave) == (add, enter, leave)
    assert (copy.__name__, copy.__wrapped__) == ("add", add)
    assert copy(1, 1) == 2


def test_arguments_are_checked_and_cycles_collected() -> None:
    with pytest.raises(TypeError, match="callable"):
        Around(add, enter, None)

    class Owner:
        pass

    owner = Owner()
    owner.around = Around(add, enter, leave)
    owner.around.__dict__["owner"] = owner  # a cycle through the Around's __dict__
    alive = weakref.ref(owner)
    del owner
    gc.collect()
    assert alive() is None
