"""The cyclic garbage collector paused while records are built in bulk."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the block (as it was after).

    Decoding records or a measurement builds hundreds of thousands of small
    containers at once, none of them garbage; the collector would scan them
    again and again (measured: most of the time of loading a measurement of
    10,000 chunks, and two thirds of a collector's exit with 2,000 records).
    The collector runs again as usual after the block.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
