"""A run's events over time: the rate series of the dashboard page's runs table.

The events of each chunk as its record arrives, counted in buckets of equal width from the
run's first chunk. When a run outlasts :data:`MAX_POINTS` buckets, neighbouring buckets
merge and the width doubles, so a run of any length keeps its whole history in bounded
memory, at a resolution of at least 1/:data:`MAX_POINTS` of its length. The buckets sum to
the run's events exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Buckets kept per run.
MAX_POINTS = 120
#: The buckets' width until a run outlasts MAX_POINTS of them, seconds.
FIRST_WIDTH = 1.0


@dataclass
class RateSeries:
    """Events per bucket since ``start`` (the first chunk's arrival; None before it)."""

    start: float | None = None
    width: float = FIRST_WIDTH
    events: list[int] = field(default_factory=list)

    def add(self, at: float, events: int) -> None:
        """Count ``events`` arrived at ``at`` (the totals' clock, seconds)."""
        if self.start is None:
            self.start = at
        index = self._index(at)
        while index >= MAX_POINTS:
            self.events = [sum(self.events[i : i + 2]) for i in range(0, len(self.events), 2)]
            self.width *= 2
            index = self._index(at)
        if index >= len(self.events):
            self.events.extend([0] * (index + 1 - len(self.events)))
        self.events[index] += events

    def _index(self, at: float) -> int:
        assert self.start is not None
        return max(0, int((at - self.start) // self.width))

    def as_dict(self) -> dict[str, object]:
        """``{"start", "width", "events"}`` for the page (a bucket's rate: events / width)."""
        return {"start": self.start, "width": self.width, "events": list(self.events)}
