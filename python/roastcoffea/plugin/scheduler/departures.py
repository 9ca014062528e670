"""Why workers left the cluster: died, asked to leave, or died and came back.

The snapshot's worker table is keyed by address, so a worker its nanny
restarts at the same address looks as if it never left. The scheduler plugin
therefore logs every departure as it happens. A departure was asked for when
``remove_worker``'s ``stimulus_id`` says so (Dask's ``retire_workers``), or
when the worker announced an orderly close first: ``Worker.close`` logs a
``{"action": "closing-worker", "reason": ...}`` event on the worker's address
before it leaves, with a reason that names a request (its nanny or itself
being closed, e.g. by ``cluster.scale``). A worker that is killed, crashes or
loses its connection announces nothing: it is lost. A later arrival with the
same name or address is the restart of the last lost one (a nanny restarts
its worker under the same name, at a new or the same port).
"""

from __future__ import annotations

from collections import deque
from typing import Any

#: ``stimulus_id`` prefixes of departures the cluster asked for.
RETIRED_STIMULI = ("retire-workers", "worker-close-gracefully")
#: ``Worker.close`` reasons of a requested close.
RETIRED_REASONS = frozenset(
    {"nanny-close", "nanny-close-gracefully", "worker-close", "worker-close-gracefully"}
)

#: Departures remembered; beyond it the oldest are forgotten (counted).
MAX_DEPARTURES = 65536


class Departures:
    """A bounded log of worker departures (scheduler event loop only)."""

    def __init__(self, cap: int = MAX_DEPARTURES) -> None:
        self._log: deque[dict[str, Any]] = deque(maxlen=cap)
        self.forgotten = 0
        # {address: reason} of live workers that announced their close.
        self._closing: dict[str, str] = {}

    def closing(self, address: str, reason: str) -> None:
        """A worker announced that it closes (its ``closing-worker`` event)."""
        self._closing[address] = reason

    def left(self, address: str, name: str, stimulus_id: str, now: float) -> None:
        """A worker was removed."""
        if len(self._log) == self._log.maxlen:
            self.forgotten += 1
        reason = self._closing.pop(address, None)
        asked = stimulus_id.startswith(RETIRED_STIMULI) or reason in RETIRED_REASONS
        self._log.append(
            {
                "address": address,
                "name": name,
                "removed": now,
                "kind": "retired" if asked else "lost",
                "stimulus_id": stimulus_id,
                "close_reason": reason,
                "restarted_as": None,
                "restarted_at": None,
            }
        )

    def arrived(self, address: str, name: str, now: float) -> None:
        """A worker joined: the restart of the last lost worker of that name or address."""
        for departure in reversed(self._log):
            if departure["restarted_as"] is not None or departure["kind"] != "lost":
                continue
            if departure["name"] == name or departure["address"] == address:
                departure["restarted_as"] = address
                departure["restarted_at"] = now
                return

    def between(self, t_from: float, t_to: float) -> list[dict[str, Any]]:
        """Copies of the departures inside ``[t_from, t_to]``, oldest first."""
        return [dict(d) for d in self._log if t_from <= d["removed"] <= t_to]
