"""Small Dask task functions for the tests and benchmarks.

They run on the workers, so they import nothing heavy.
"""

from __future__ import annotations

import time


def burn(seconds: float, seed: int = 0) -> int:
    """Keep one thread busy for ``seconds`` of its own CPU time.

    Parameters
    ----------
    seconds : float
        Thread CPU time to spend.
    seed : int
        Folded into the result, so that calls with different seeds differ.

    Returns
    -------
    int
        A number derived from the loop, so the work cannot be skipped.
    """
    deadline = time.thread_time() + seconds
    acc = seed
    while time.thread_time() < deadline:
        for i in range(1000):
            acc = (acc * 31 + i) % 1_000_003
    return acc


def nap(seconds: float, seed: int = 0) -> int:
    """Sleep for ``seconds`` (wall time without CPU), then return ``seed``."""
    time.sleep(seconds)
    return seed


def combine(*values: int) -> int:
    """Reduce the results of the other tasks to one number."""
    return sum(values) % 1_000_003
