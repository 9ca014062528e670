"""Names that fit a narrow terminal and stay apart: cut where a column's names agree.

A table of files ``nano_000.root`` … ``nano_007.root`` cut at its right end shows eight
``nano_0…``. :class:`Elided` cuts a name inside the start and end it shares with the
other names of its column (``nan…0.root``), so names that differ still differ; a path
(:func:`path_cells`) is cut at its start, so the file name and line number stay whole.
Rich measures each cell (:meth:`Elided.__rich_measure__`) and gives it a width; the cell
is cut to that width only when it must be.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.measure import Measurement
from rich.text import Text

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult

ELLIPSIS = "…"


class Elided:
    """A one-line text cut to its width where it matches its peers, its distinct part kept.

    Parameters
    ----------
    text : rich.text.Text
        The whole text.
    shared_start, shared_end : int
        Characters at its start and end that its peers have too: a cut goes there first
        (the start trimmed from its end, then the end from its end), then, when even the
        distinct part is too long, in the middle.
    from_start : bool, default False
        Cut at the start only (a path: what is nearest the file name stays).
    """

    def __init__(
        self, text: Text, shared_start: int = 0, shared_end: int = 0, from_start: bool = False
    ) -> None:
        self.text, self.shared_start, self.shared_end = text, shared_start, shared_end
        self.from_start = from_start

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        length = self.text.cell_len
        core = length - self.shared_start - self.shared_end
        return Measurement(
            min(length, core + bool(self.shared_start) + bool(self.shared_end)), length
        )

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        if self.from_start and self.text.cell_len > width:
            tail = self.text.plain[-(width - 1) :] if width > 1 else ""
            yield Text(ELLIPSIS + tail, style=self.text.style, no_wrap=True)
        else:
            yield cut(self.text, width, self.shared_start, self.shared_end)


def cut(text: Text, width: int, shared_start: int = 0, shared_end: int = 0) -> Text:
    """``text`` in at most ``width`` cells, each cut marked with "…" (see :class:`Elided`)."""
    plain = text.plain
    if len(plain) <= width:
        return text
    width = max(width, 1)
    start, end = plain[:shared_start], plain[len(plain) - shared_end :]
    core = plain[shared_start : len(plain) - shared_end]
    excess = len(plain) - width
    if excess + 1 <= len(start) - 1:  # one cut inside the shared start, its first chars kept
        out = start[: len(start) - excess - 1] + ELLIPSIS + core + end
    elif (room := width - bool(start) - len(core)) >= (1 if end else 0):
        lead = ELLIPSIS if start else ""
        out = lead + core + (end if len(end) <= room else end[: room - 1] + ELLIPSIS)
    else:
        head = width // 2
        out = plain[:head] + ELLIPSIS + plain[len(plain) - (width - 1 - head) :]
    return Text(out, style=text.style, no_wrap=True)


def name_cells(texts: Sequence[Text]) -> list[Elided]:
    """Each name of a column, to be cut inside what it shares with every other."""
    plains = [t.plain for t in texts]
    if len(set(plains)) < 2:
        return [Elided(t) for t in texts]
    start = _common_start(plains)
    end = _common_start([p[::-1] for p in plains])
    shortest = min(map(len, plains))
    end = min(end, shortest - start)
    return [Elided(t, start, end) for t in texts]


def _common_start(strings: Sequence[str]) -> int:
    """How many characters every string starts with."""
    first, n = min(strings), 0
    last = max(strings)
    while n < len(first) and first[n] == last[n]:
        n += 1
    return n


def path_cells(texts: Sequence[Text]) -> list[Elided]:
    """Each ``path:line`` of a column, to be cut at its start: its file and line kept."""
    return [Elided(t, t.cell_len - len(t.plain.rsplit("/", 1)[-1]), from_start=True) for t in texts]
