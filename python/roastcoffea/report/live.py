"""The live view: a rich panel fed by the plugin's pushed deltas while a collector runs.

The scheduler publishes one delta per sampler tick on the event topic
``"roastcoffea"`` (see :mod:`roastcoffea.plugin.scheduler.live`) while a client listens
(:class:`roastcoffea.plugin.LiveFeed`);
:class:`LiveView` subscribes, keeps running totals and the rates of the last
few seconds, and draws them with :class:`rich.live.Live`. It runs only when
stdout is a terminal; it never raises into the analysis (a failure to start
just leaves the view off, with the reason in :attr:`LiveView.off_reason`).
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, TypeGuard

from rich.console import Console
from rich.live import Live
from rich.panel import Panel
from rich.table import Table

from roastcoffea.units import format_bytes, format_gbps, format_rate, format_time

logger = logging.getLogger(__name__)

#: Seconds of deltas the rates are averaged over.
RATE_WINDOW = 5.0
#: Redraws per second.
REFRESH_PER_SECOND = 2


def is_terminal() -> bool:
    """Whether stdout is an interactive terminal (the only place the view draws)."""
    try:
        return bool(sys.stdout.isatty())
    except (AttributeError, ValueError):  # replaced or closed stdout
        return False


def _console() -> Console:
    """coffea's console when coffea is loaded (its progress bars nest with ours), else rich's."""
    coffea_util = sys.modules.get("coffea.util")
    console = getattr(coffea_util, "coffea_console", None)
    if isinstance(console, Console):
        return console
    from rich import get_console

    return get_console()


class LiveView:
    """Subscribes to the plugin's live deltas and draws them.

    Parameters
    ----------
    feed : LiveFeed or None
        Where the deltas come from: anything with ``subscribe(handler) ->
        reason or None`` and ``unsubscribe()``, e.g.
        :class:`roastcoffea.plugin.LiveFeed`; None for a view fed by
        :meth:`receive` alone.
    title : str, default "roastcoffea"
    """

    def __init__(self, feed: Any, title: str = "roastcoffea") -> None:
        self._feed = feed
        self._title = title
        self._lock = threading.Lock()
        self._recent: deque[dict[str, Any]] = deque()
        self._totals: dict[str, float] = dict.fromkeys(
            ("tasks", "erred", "chunks", "events", "bytes"), 0
        )
        self._workers: dict[str, dict[str, float | None]] = {}
        # Σ wall seconds per processor phase, from the phase records seen so far.
        self._phases: dict[str, float] = {}
        self._started_at = time.perf_counter()
        self._live: Live | None = None
        self._final: dict[str, Any] | None = None
        self._subscribed = False
        self.deltas = 0
        self.off_reason: str | None = None

    # ---- lifecycle -----------------------------------------------------------

    def start(self) -> bool:
        """Subscribe and start drawing.

        Returns
        -------
        bool
            False when the view stays off (``off_reason`` says why).
        """
        try:
            if self._feed is not None:
                self.off_reason = self._feed.subscribe(self.receive)
                if self.off_reason is not None:
                    return False
                self._subscribed = True
            self._start_drawing()
        except Exception as exc:
            self.off_reason = f"{type(exc).__name__}: {exc}"
            logger.debug("roastcoffea: live view not started", exc_info=True)
            self.stop()
            return False
        return True

    def _start_drawing(self) -> None:
        self._live = Live(
            get_renderable=self.render,
            console=_console(),
            refresh_per_second=REFRESH_PER_SECOND,
            transient=True,
        )
        self._live.start()

    def _stop_drawing(self) -> None:
        live, self._live = self._live, None
        if live is not None:
            live.stop()

    def stop(self, final: Mapping[str, Any] | None = None) -> None:
        """Stop drawing and unsubscribe (never raises).

        ``final``: the whole block's figures from the final flush (the keys
        of :meth:`state`, and ``elapsed``), shown by the last frame instead
        of the last live window: a block shorter than a scheduler tick still
        ends on its figures.
        """
        if final is not None:
            settled = dict(final)
            if settled.get("memory_bytes") is None:  # the flush has no memory reading
                settled["memory_bytes"] = self.state()["memory_bytes"]
            with self._lock:
                self._final = settled
        try:
            self._stop_drawing()
        except Exception:
            logger.debug("roastcoffea: live view stop failed", exc_info=True)
        if self._subscribed:
            self._subscribed = False
            try:
                self._feed.unsubscribe()
            except Exception:
                logger.debug("roastcoffea: unsubscribe failed", exc_info=True)

    # ---- data ----------------------------------------------------------------

    def receive(self, event: Any) -> None:
        """Take one ``(timestamp, delta)`` event from the topic (malformed ones are ignored)."""
        try:
            _, msg = event
            delta = {
                "interval": float(msg["interval"]),
                "tasks": int(msg.get("tasks", 0)),
                "erred": int(msg.get("erred", 0)),
                "chunks": int(msg.get("chunks", 0)),
                "events": int(msg.get("chunk_events", 0)),
                "bytes": int(msg.get("chunk_bytes", 0)),
                "transition_rate_hz": float(msg.get("transition_rate_hz", 0.0)),
            }
            workers = dict(msg.get("workers", {}))
            phases = {str(p): float(s) for p, s in dict(msg.get("phases", {})).items()}
        except Exception:
            return
        with self._lock:
            self.deltas += 1
            for key in ("tasks", "erred", "chunks", "events", "bytes"):
                self._totals[key] += delta[key]
            for phase, seconds in phases.items():
                self._phases[phase] = self._phases.get(phase, 0.0) + seconds
            self._workers = workers
            self._recent.append(delta)
            span = sum(d["interval"] for d in self._recent)
            while len(self._recent) > 1 and span - self._recent[0]["interval"] >= RATE_WINDOW:
                span -= self._recent.popleft()["interval"]

    def state(self) -> dict[str, Any]:
        """The figures the panel shows, as numbers.

        Returns
        -------
        dict
            ``event_rate_hz``, ``gbps``, ``chunk_rate_hz``, ``transition_rate_hz``
            (over the last :data:`RATE_WINDOW` seconds; None before the first
            delta), ``workers``, ``memory_bytes`` (Σ over workers, None when
            unknown), ``dominant_phase`` (the processor phase with the most
            time so far and its % share, None before the first phase record),
            the totals ``tasks``, ``erred``, ``chunks``, ``events``,
            ``bytes``, and ``elapsed`` (s). Once stopped with the final
            figures (:func:`final_figures`), those: rates over the whole block.
        """
        with self._lock:
            if self._final is not None:
                return dict(self._final)
            recent = list(self._recent)
            totals = dict(self._totals)
            workers = dict(self._workers)
            phases = dict(self._phases)
        span = sum(d["interval"] for d in recent)
        rates: dict[str, float | None] = dict.fromkeys(
            ("event_rate_hz", "gbps", "chunk_rate_hz", "transition_rate_hz")
        )
        if span > 0:
            rates["event_rate_hz"] = sum(d["events"] for d in recent) / span
            rates["gbps"] = sum(d["bytes"] for d in recent) * 8 / 1e9 / span
            rates["chunk_rate_hz"] = sum(d["chunks"] for d in recent) / span
            rates["transition_rate_hz"] = recent[-1]["transition_rate_hz"]
        memory = [w.get("memory") for w in workers.values() if isinstance(w, dict)]
        known = [m for m in memory if isinstance(m, (int, float))]
        return {
            **rates,
            "workers": len(workers),
            "memory_bytes": sum(known) if known else None,
            "dominant_phase": largest_share(phases),
            **totals,
            "elapsed": time.perf_counter() - self._started_at,
        }

    @property
    def settled(self) -> bool:
        """Whether the view shows the whole block's final figures."""
        return self._final is not None

    def render(self) -> Panel:
        """The panel for the current state."""
        s = self.state()
        elapsed = s["elapsed"]

        def rate(value: float | None, fmt: Callable[[float], str]) -> str:
            return "[dim]waiting for data[/dim]" if value is None else fmt(value)

        # Two time bases, two names: the last seconds while running, the block at the end.
        basis = "(wall time)" if self.settled else f"(last {RATE_WINDOW:g} s)"
        table = Table.grid(padding=(0, 2))
        table.add_column(style="cyan", no_wrap=True)
        table.add_column(justify="right", style="magenta")
        table.add_column(style="cyan", no_wrap=True)
        table.add_column(justify="right", style="magenta")
        table.add_row(
            f"Event rate {basis}",
            rate(s["event_rate_hz"], format_rate),
            "Workers",
            str(s["workers"]),
        )
        table.add_row(
            f"Data rate {basis}",
            rate(s["gbps"], format_gbps),
            "Memory",
            "N/A" if s["memory_bytes"] is None else format_bytes(s["memory_bytes"]),
        )
        table.add_row(
            "Events",
            count_text(s["events"]),
            "Tasks done",
            f"{s['tasks']:,}" + (f" ([red]{s['erred']} erred[/red])" if s["erred"] else ""),
        )
        table.add_row("Chunks", f"{s['chunks']:,}", "Elapsed", format_time(elapsed))
        table.add_row("Dominant phase", dominant_phase(s["dominant_phase"]), "", "")
        return Panel(table, title=self._title, expand=False)


def final_figures(metrics: Mapping[str, Any], workers: int) -> dict[str, Any] | None:
    """The whole block's figures for the live view's last frame, read from its metrics.

    The numbers the summary shows, rates over the block's wall time: events from the
    coffea report (else the chunk records, per dataset), bytes from the report, the
    run's tasks and erred tasks over its task prefixes, the phases of its tasks.
    None when the block has no wall time.
    """
    wall = metrics.get("wall_time")
    if not _is_number(wall) or wall <= 0:
        return None
    events = metrics.get("total_events")
    if not _is_number(events):
        counts = [row.get("total_events") for row in (metrics.get("per_dataset") or {}).values()]
        events = sum(counts) if counts and all(_is_number(c) for c in counts) else None
    nbytes = metrics.get("bytes_read_compressed")
    nbytes = nbytes if _is_number(nbytes) else None
    prefixes = (metrics.get("per_prefix") or {}).values()
    phases = metrics.get("phase_wall_seconds")
    chunks = metrics.get("num_chunks")
    return {
        "event_rate_hz": None if events is None else events / wall,
        "gbps": None if nbytes is None else nbytes * 8 / 1e9 / wall,
        "chunk_rate_hz": None,
        "transition_rate_hz": None,
        "workers": workers,
        "memory_bytes": None,
        "dominant_phase": largest_share(phases) if isinstance(phases, Mapping) else None,
        "tasks": sum(int(row.get("tasks") or 0) for row in prefixes),
        "erred": sum(int(row.get("erred") or 0) for row in prefixes),
        "chunks": int(chunks) if _is_number(chunks) else 0,
        "events": events,
        "bytes": nbytes,
        "elapsed": wall,
    }


def _is_number(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def count_text(value: Any) -> str:
    """A count with thousands separators; ``N/A`` when it is not known."""
    return "N/A" if value is None else f"{value:,}"


def largest_share(phases: Mapping[str, float]) -> tuple[str, float] | None:
    """The phase with the most seconds and its % of them all; None before any second."""
    spent = sum(phases.values())
    if spent <= 0:
        return None
    top = max(phases, key=phases.__getitem__)
    return top, 100 * phases[top] / spent


def dominant_phase(value: tuple[str, float] | None) -> str:
    """``"user (43.2%)"``, or that no task has reported its phases yet."""
    return "no phase record yet" if value is None else f"{value[0]} ({value[1]:.1f}%)"
