"""The RSS the chunk records carry: the same figure as psutil's, in this process and a fork."""

from __future__ import annotations

import multiprocessing
import os

import psutil
import pytest

from roastcoffea.instrument._chunk import Rss

MIB = 1048576.0


def both() -> tuple[float, float]:
    """(ours, psutil's) RSS in MiB, read back to back."""
    rss = Rss()
    rss()  # open the file first: the reads below are then back to back
    return rss(), psutil.Process().memory_info().rss / MIB


def test_rss_is_psutils_figure() -> None:
    ours, theirs = both()
    assert ours == pytest.approx(theirs, abs=1.0)  # the two reads are microseconds apart


def _child(rss: Rss, out: multiprocessing.Queue) -> None:
    ballast = bytearray(256 << 20)  # the parent's RSS lacks this: a stale file would show it
    ballast[::4096] = b"x" * len(ballast[::4096])
    out.put((os.getpid(), rss(), psutil.Process().memory_info().rss / MIB))


def test_rss_follows_a_fork() -> None:
    rss = Rss()
    rss()  # opened in the parent
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_child, args=(rss, out))
    child.start()
    pid, ours, theirs = out.get(timeout=60)
    child.join(60)
    assert pid == child.pid != os.getpid()
    assert ours == pytest.approx(theirs, abs=1.0)


def test_rss_falls_back_to_psutil(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_proc(*args: object) -> int:
        raise FileNotFoundError("no /proc here")

    rss = Rss()
    monkeypatch.setattr(os, "open", no_proc)
    ours = rss()
    assert ours == pytest.approx(psutil.Process().memory_info().rss / MIB, abs=1.0)
