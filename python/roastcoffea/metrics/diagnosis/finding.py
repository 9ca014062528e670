"""A finding, and the processor time every finding is weighed against.

A finding says what the numbers show (its ``cause``, resting on its ``evidence``), what
it holds at stake (the processing's wall time the cause held: what removing it could
save at most) and what to do (its ``actions``). An action that turns a knob every run
has, the chunk size or the worker threads, says which way: the reconciliation
(:mod:`.reconcile`) keeps one way per knob.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from roastcoffea.metrics._util import Metrics

#: The knobs the actions turn, and their two ways.
KNOBS = {"chunk_size": ("larger", "smaller"), "threads": ("more", "fewer")}


@dataclass(frozen=True)
class Action:
    """Something to do; ``knob`` and ``way`` when it turns a knob of :data:`KNOBS`."""

    text: str
    knob: str | None = None
    way: str | None = None


@dataclass(frozen=True)
class Finding:
    """One cause of lost time, what it holds at stake and what to do about it.

    Attributes
    ----------
    rule : str
        The rule that found it (docs/metrics.md, "Diagnosis").
    phase : str or None
        The phase it is about.
    share_percent : float
        Its share of what the rule weighs (the processor time, the bytes fetched, the
        thread-seconds).
    wall_at_stake_seconds : float or None
        The processing's wall seconds the cause held (None: not measurable, without
        the phase clock).
    cause : str
        What the numbers show.
    actions : tuple of Action
        What typically helps, first the most direct.
    evidence : dict
        The numbers it rests on.
    claims : dict
        The thread-seconds of phases its cause holds, ``{phase: seconds}``: the phase
        rules do not count them again (:meth:`Basis.claiming`).
    """

    rule: str
    phase: str | None
    share_percent: float
    wall_at_stake_seconds: float | None
    cause: str
    actions: tuple[Action, ...]
    evidence: dict[str, Any] = field(default_factory=dict)
    claims: dict[str, float] = field(default_factory=dict)

    def wants(self, knob: str) -> str | None:
        """The way this finding turns ``knob``, or None."""
        return next((a.way for a in self.actions if a.knob == knob), None)

    def without(self, knob: str, note: str) -> Finding:
        """This finding with its actions on ``knob`` replaced by ``note``."""
        kept = tuple(a for a in self.actions if a.knob != knob)
        return replace(self, actions=(*kept, Action(note)))

    @property
    def message(self) -> str:
        """The cause and the actions as one sentence."""
        if not self.actions:
            return self.cause
        return f"{self.cause}: " + "; ".join(a.text for a in self.actions)

    def as_dict(self) -> dict[str, Any]:
        """The finding as the metrics dictionary holds it."""
        return {
            "rule": self.rule,
            "phase": self.phase,
            "share_percent": self.share_percent,
            "wall_at_stake_seconds": self.wall_at_stake_seconds,
            "cause": self.cause,
            "message": self.message,
            "actions": [a.text for a in self.actions],
            "knobs": {a.knob: a.way for a in self.actions if a.knob is not None},
            "evidence": self.evidence,
        }


@dataclass(frozen=True)
class Basis:
    """The measured processor tasks' time, against which the findings are weighed.

    ``wall`` is the tasks' thread-seconds per phase, ``cpu_wait`` the part of it they
    spent waiting for a CPU (None: not measured), ``processing`` the processing's wall
    seconds (first task's start to last one's end; the block's wall time without task
    intervals). A phase's *effective* time is its wall less its wait for a CPU and less
    what another finding has ``claimed`` of it: the time a remedy of that phase (reading
    less, another codec, larger chunks) can save; the wait is the contention finding's,
    the decompression of baskets far larger than the chunks the basket-size finding's.
    """

    wall: dict[str, float]
    cpu_wait: dict[str, float] | None
    processing: float | None
    tasks: int
    claimed: dict[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, out: Metrics) -> Basis:
        processing = out.get("processing_seconds")
        if processing is None:
            processing = out.get("wall_time") or None
        return cls(
            wall=out.get("phase_wall_seconds") or {},
            cpu_wait=out.get("phase_cpu_wait_seconds"),
            processing=processing,
            tasks=out.get("phase_tasks") or 0,
        )

    @property
    def total(self) -> float:
        """The tasks' thread-seconds, every phase."""
        return math.fsum(self.wall.values())

    def waited(self, phase: str | None = None) -> float:
        """Thread-seconds waiting for a CPU, in ``phase`` or in all."""
        if self.cpu_wait is None:
            return 0.0
        if phase is None:
            return math.fsum(self.cpu_wait.values())
        return self.cpu_wait.get(phase, 0.0)

    def effective(self, phase: str) -> float:
        """A phase's thread-seconds less its wait for a CPU and what was claimed of it."""
        rest = self.wall.get(phase, 0.0) - self.waited(phase) - self.claimed.get(phase, 0.0)
        return max(rest, 0.0)

    def claiming(self, seconds: dict[str, float]) -> Basis:
        """This basis with ``seconds`` of each phase claimed by a finding."""
        claimed = {
            p: self.claimed.get(p, 0.0) + seconds.get(p, 0.0) for p in {*self.claimed, *seconds}
        }
        return replace(self, claimed=claimed)

    def share(self, seconds: float) -> float:
        """``seconds`` of thread time as a percent of the tasks'."""
        total = self.total
        return 100.0 * seconds / total if total > 0 else 0.0

    def effective_share(self, seconds: float) -> float:
        """``seconds`` as a percent of the tasks' time not spent waiting for a CPU: a
        phase's share that contention neither raises nor dilutes."""
        running = self.total - self.waited()
        return 100.0 * seconds / running if running > 0 else 0.0

    def at_stake(self, seconds: float) -> float | None:
        """The processing's wall seconds that ``seconds`` of the tasks' thread time held:
        ``processing * seconds / total``."""
        total = self.total
        if total <= 0 or self.processing is None:
            return None
        return self.processing * seconds / total
