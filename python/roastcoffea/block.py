"""A collector's block on the cluster: its entry, its exit, and the run the exit collects.

:class:`Block` holds what changes while the block runs (its clocks, its span, the
notes and errors of its monitoring) and talks to the plugin through
:mod:`roastcoffea.plugin.client.session`: one call at entry, one at exit, the workers'
profiles asked for beside the exit's flush. The exit builds a :class:`CollectedRun`
once: the snapshot decoded, the records sorted, the profiles and departures taken.
Nothing of it changes afterwards; the metrics are computed from it, and from what
the user adds (the coffea report), when first asked for.

Monitoring never stops the analysis: every step is guarded, its failure a
collector error, and the block runs on without the plugin if need be.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import roastcoffea.config as config
from roastcoffea._gc import paused as paused_gc
from roastcoffea._native import decode_exit_snapshot
from roastcoffea.metrics import MetricsInputs
from roastcoffea.metrics.departures import Departures, cluster_shape, sort_departures
from roastcoffea.metrics.fine import span_metrics
from roastcoffea.plugin.client.profiles import ProfileRequest
from roastcoffea.plugin.client.run import run_span
from roastcoffea.plugin.client.session import (
    ExitDeadline,
    finish_session,
    open_session,
)
from roastcoffea.plugin.client.stream import RecordStream
from roastcoffea.plugin.protocol import FinishReply
from roastcoffea.records import decode_records, drain_local_records, records_by_kind

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Name of the Dask span a collector opens unless given one (roastcoffea 0.1.2's).
SPAN_NAME = "coffea-processing"
#: Padding of a block's window: the series store times in milliseconds, so a
#: sample taken at the window's edge may be stored up to a millisecond outside.
WINDOW_PAD = 1e-3


@dataclass(frozen=True)
class CollectedRun:
    """Everything a collector's exit took from the cluster, built once.

    Times: ``t_start``/``t_end`` the block's wall-clock epoch seconds, ``wall_time``
    its ``perf_counter`` seconds, ``window`` the span's window on the scheduler's
    clock. ``snapshot`` is the plugin's snapshot of the block's span subtree (None,
    with the reason in ``errors``, when the exit could not take one) and
    ``native_state`` the state file text a measurement keeps.
    """

    span_id: str | None
    span_name: str
    t_start: float
    t_end: float
    wall_time: float
    window: tuple[float, float]
    plugin_interval: float | None
    snapshot: dict[str, Any] | None = None
    snapshot_size: int | None = None
    native_state: str | None = None
    span_ids: frozenset[str] = frozenset()
    chunks: tuple[dict[str, Any], ...] = ()
    phases: tuple[dict[str, Any], ...] = ()
    detected_prefixes: frozenset[str] = frozenset()
    records_skipped: int = 0
    records_lost: dict[str, int] = field(default_factory=dict)
    records_dropped: int | None = None
    records_streamed: int = 0
    profiles: dict[str, dict[str, Any]] | None = None
    profile_reason: str | None = "the exit took no snapshot"
    span_metrics: dict[tuple, float] | None = None
    departures: Departures = field(default_factory=lambda: Departures([], [], [], []))
    flush_seconds: float | None = None
    notes: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()

    def cluster_shape(self) -> dict[str, Any]:
        """Workers, threads and memory limits at the end of the block
        (:func:`roastcoffea.metrics.departures.cluster_shape`)."""
        return cluster_shape(self.snapshot, len(self.departures.lost))

    def metadata(self, settings: dict[str, Any]) -> dict[str, Any]:
        """What a measurement's metadata adds for this run: the cluster at its end, its span,
        the collector's ``settings`` and the plugin's interval."""
        return {
            "cluster": self.cluster_shape(),
            "span": {"name": self.span_name, "id": self.span_id},
            "collector": {**settings, "plugin_interval": self.plugin_interval},
        }

    def inputs(
        self,
        report: dict[str, Any] | None,
        custom_metrics: dict[str, Any] | None,
        chunks: list[dict[str, Any]],
        processor_prefixes: set[str] | None,
        track_workers: bool,
    ) -> MetricsInputs:
        """The metrics' inputs: this run and what the user gave (report, chunk records)."""
        return MetricsInputs(
            snapshot=self.snapshot if self.snapshot is not None else empty_snapshot(),
            t_start=self.window[0],
            t_end=max(self.window),
            wall_time=self.wall_time,
            coffea_report=report,
            custom_metrics=custom_metrics,
            chunks=list(chunks),
            phases=list(self.phases),
            processor_prefixes=processor_prefixes,
            detected_prefixes=set(self.detected_prefixes),
            track_workers=track_workers,
            profiles=self.profiles,
            profile_reason=self.profile_reason,
            unmonitored={w["address"]: w["reason"] for w in self.departures.unmonitored},
            records_lost=dict(self.records_lost),
            records_dropped=self.records_dropped,
        )

    def annotate(self, metrics: dict[str, Any]) -> None:
        """Add what only the collector knows: departed workers, its own errors and costs."""
        for key, workers in zip(
            ("lost_workers", "retired_workers", "restarted_workers", "unmonitored_workers"),
            self.departures,
            strict=True,
        ):
            metrics.setdefault(key, list(workers))
        metrics["span_info"] = {"name": self.span_name, "id": self.span_id}
        monitoring = metrics.setdefault("monitoring", {})
        monitoring["collector_errors"] = list(self.errors)
        monitoring["notes"] = list(self.notes)
        monitoring["flush_seconds"] = self.flush_seconds
        monitoring["snapshot_bytes"] = self.snapshot_size
        monitoring["records_skipped"] = self.records_skipped
        monitoring["records_lost"] = dict(self.records_lost)
        monitoring["run_records_dropped"] = self.records_dropped
        monitoring["records_streamed"] = self.records_streamed
        monitoring["plugin_interval"] = self.plugin_interval
        unavailable = metrics.setdefault("unavailable", {})
        if self.snapshot is None:
            unavailable.setdefault("snapshot", "no snapshot: " + "; ".join(self.errors))
        if self.flush_seconds is None:
            unavailable.setdefault("flush_seconds", "the flush did not complete")


class Block:
    """One collector's block: entered, then collected once at its exit.

    Parameters
    ----------
    client : distributed.Client
    interval : float
        Sampler interval of a plugin this block registers.
    processor_prefixes : set of str, optional
        The processor's task prefixes, given (else detected).
    processor_name : str, optional
        The processor's class name: its prefix when none was detected.
    name : str
        The name of the block's Dask span: the run's name on the dashboards.
    """

    def __init__(
        self,
        client: Any,
        interval: float,
        processor_prefixes: set[str] | None = None,
        processor_name: str | None = None,
        name: str = SPAN_NAME,
    ) -> None:
        self.client = client
        self.name = name
        self.interval = interval
        self.processor_prefixes = processor_prefixes
        self.processor_name = processor_name
        self.notes: list[str] = []
        self.errors: list[str] = []
        self.plugin_interval: float | None = None
        self.span_id: str | None = None
        self._span: AbstractContextManager[str] | None = None
        self._stream: RecordStream | None = None
        self.t_start = time.time()
        self.t_end: float | None = None
        self.wall_time: float | None = None
        self._perf_start = time.perf_counter()
        self._t_from = self.t_start - WINDOW_PAD
        self._logged = 0

    # ---- entry ------------------------------------------------------------------------

    def open(self) -> None:
        """Make sure the plugin runs (guarded: without it the block still runs)."""
        scheduler_time = self.guard("register plugin", self._open_session)
        self.log_errors()
        self.t_start = time.time()
        self._perf_start = time.perf_counter()
        self._t_from = min(self.t_start, scheduler_time or self.t_start) - WINDOW_PAD

    def _open_session(self) -> float:
        info = open_session(self.client, self.interval)
        self.plugin_interval = info["interval"]
        if info["interval"] != self.interval:
            self.notes.append(
                f"RoastPlugin already registered with interval {info['interval']} s; "
                f"kept it (worker_tracking_interval={self.interval} not applied)"
            )
        if not info["live"]:
            self.notes.append("RoastPlugin registered with live=False: no live view data")
        if not info["phases"]:
            self.notes.append("RoastPlugin registered with phases=False: no phase metrics")
        return info["time"]

    def enter_span(self) -> None:
        """Open the block's span (in the caller's context: Dask annotates from it)."""
        self._span = run_span(self.client, self.name)
        self.span_id = self._span.__enter__()
        if self.plugin_interval is not None:  # the plugin runs
            self._stream = self.guard("record stream", self._start_stream)

    def _start_stream(self) -> RecordStream:
        assert self.span_id is not None
        interval = config.check_interval(
            config.seconds("record-stream-interval"), "record-stream-interval"
        )
        stream = RecordStream(self.client, self.span_id, self.name, interval)
        stream.start()
        return stream

    # ---- exit -------------------------------------------------------------------------

    def end(self) -> float:
        """Stop the block's clocks and close its span; the ``perf_counter`` of the end."""
        perf_end = time.perf_counter()
        self.t_end = time.time()
        self.wall_time = perf_end - self._perf_start
        span, self._span = self._span, None
        if span is not None:
            self.guard("close span", lambda: span.__exit__(None, None, None))
        return perf_end

    def collect(self) -> CollectedRun:
        """The exit: the flush and snapshot, the profiles beside them, the records decoded."""
        assert self.t_end is not None and self.wall_time is not None
        t_to = self.t_end + WINDOW_PAD
        profiles = self.guard("profile request", lambda: self._request_profiles(t_to))
        deadline = ExitDeadline(config.seconds("probe-timeout"), config.seconds("flush-timeout"))
        self.guard("record stream", lambda: self._end_stream(deadline))
        reply = self.guard("snapshot", lambda: self._finish(deadline))
        window = (self._t_from, reply["t_to"] if reply else t_to)
        data: dict[str, Any] = {}
        with paused_gc():  # builds every record at once: no garbage for the collector
            if reply is not None:
                self.guard("snapshot", lambda: data.update(self._snapshot(reply)))
            if "snapshot" in data:
                self.guard("decode records", lambda: data.update(self._records(data)))
                self.guard("departures", lambda: data.update(self._departures(reply, data, window)))
                self.guard("profile", lambda: data.update(self._profiles(profiles, data)))
            elif self._stream is not None and self._stream.records:
                # no snapshot: what the stream took is still the run's
                partial = {"snapshot": {"records": []}, "span_ids": frozenset({self.span_id})}
                self.guard("decode records", lambda: data.update(self._records(partial)))
        self.log_errors()
        return CollectedRun(
            span_id=self.span_id,
            span_name=self.name,
            t_start=self.t_start,
            t_end=self.t_end,
            wall_time=self.wall_time,
            window=window,
            plugin_interval=self.plugin_interval,
            notes=tuple(self.notes),
            errors=tuple(self.errors),
            **data,
        )

    def _end_stream(self, deadline: ExitDeadline) -> None:
        """Stop the record stream within the exit's probe time; a call it could not make is
        a note, not a loss: the exit's snapshot carries every record it did not acknowledge."""
        stream = self._stream
        if stream is None:
            return
        stream.stop(min(deadline.probe, deadline.remaining()))
        if stream.reason is not None:
            self.notes.append(
                f"record stream: {stream.failures} of {stream.calls + stream.failures} calls "
                f"failed or ended it ({stream.reason}); the exit's snapshot carried the rest"
            )

    def _finish(self, deadline: ExitDeadline) -> FinishReply:
        assert self.span_id is not None
        t_to = (self.t_end or time.time()) + WINDOW_PAD
        acked = 0 if self._stream is None else self._stream.acked
        reply = finish_session(
            self.client,
            self.span_id,
            self.name,
            (self._t_from, t_to),
            deadline,
            self.wall_time,
            acked,
        )
        for address, message in reply["flush"].get("errors", {}).items():
            self.errors.append(f"flush {address}: {message}")
        if not isinstance(reply["snapshot"], bytes):
            kind = type(reply["snapshot"]).__name__
            raise RuntimeError(f"the scheduler answered {kind} to a snapshot")
        return reply

    def _snapshot(self, reply: FinishReply) -> dict[str, Any]:
        """The snapshot decoded once: the data, and the state a measurement keeps."""
        assert self.span_id is not None
        snapshot, native_state = decode_exit_snapshot(reply["snapshot"])
        return {
            "snapshot": snapshot,
            "snapshot_size": len(reply["snapshot"]),
            "native_state": native_state,
            "span_ids": frozenset({self.span_id, *snapshot["spans"]}),
            "span_metrics": span_metrics(snapshot),
            "flush_seconds": reply["flush_seconds"],
            "records_dropped": reply["records_dropped"],
        }

    def _records(self, data: dict[str, Any]) -> dict[str, Any]:
        """The span's records (and this process's own) sorted by kind."""
        streamed: list[dict[str, Any]] = []
        if self._stream is not None:  # handed over: the bytes are not needed after the decode
            streamed, self._stream.records = self._stream.records, []
        records = decode_records([*streamed, *data["snapshot"]["records"]])
        records.extend(drain_local_records(set(data["span_ids"])))
        selected = records_by_kind(records)
        return {
            "chunks": tuple(selected.chunks),
            "phases": tuple(selected.phases),
            "detected_prefixes": frozenset(selected.prefixes),
            "records_skipped": records.skipped,
            "records_streamed": len(streamed),
            "records_lost": selected.lost,
        }

    def _departures(
        self, reply: FinishReply | None, data: dict[str, Any], window: tuple[float, float]
    ) -> dict[str, Any]:
        """The workers of the window that died, were retired, came back, or ran unmonitored."""
        assert reply is not None
        flushed = reply["flush"]
        departures = sort_departures(
            flushed.get("departures", []),
            data["snapshot"]["workers"],
            window,
            flushed.get("unmonitored", {}),
        )
        return {"departures": departures}

    def _request_profiles(self, t_to: float) -> ProfileRequest | None:
        """Ask the workers for Dask's profile of the block, beside the flush and snapshot."""
        if not config.setting("hot-lines"):
            return None
        most = config.whole_number("hot-lines-workers", config.setting("hot-lines-workers"), 1)
        return ProfileRequest(self.client, self._t_from, t_to, most)

    def _profiles(self, request: ProfileRequest | None, data: dict[str, Any]) -> dict[str, Any]:
        """The processor prefixes' profiles (Dask's own sampling), or why there are none.

        A failure is a note and the reason of the hot lines: the rest of the exit goes on.
        """
        if request is None:
            return {"profile_reason": "hot lines are off (roastcoffea.hot-lines: false)"}
        try:
            profiles, failed = request.result(config.seconds("probe-timeout"))
        except Exception as exc:
            reason = f"Dask's profile was not fetched: {type(exc).__name__}: {exc}"
            self.notes.append(reason)
            return {"profile_reason": reason}
        for worker, error in failed.items():
            self.notes.append(f"no profile of worker {worker}: {error}")
        detected = data.get("detected_prefixes", frozenset())
        prefixes = self.prefix_override(data["snapshot"], detected) or detected
        if not prefixes:
            return {"profile_reason": "no processor task prefix was seen"}
        kept = {
            worker: {p: tree for p, tree in trees.items() if p in prefixes}
            for worker, trees in profiles.items()
        }
        return {"profiles": kept, "profile_reason": None}

    def prefix_override(
        self, snapshot: dict[str, Any] | None, detected: frozenset[str]
    ) -> set[str] | None:
        """The processor prefixes given, or the processor's name when nothing was detected
        and it is one of the span's prefixes."""
        if (
            self.processor_prefixes is None
            and not detected
            and self.processor_name is not None
            and snapshot is not None
            and self.processor_name in snapshot["prefixes"]
        ):
            return {self.processor_name}
        return self.processor_prefixes

    # ---- failures ---------------------------------------------------------------------

    def guard(self, step: str, func: Callable[[], T]) -> T | None:
        """``func()``; its failure a collector error, never raised."""
        try:
            return func()
        except Exception as exc:
            self.errors.append(f"{step}: {type(exc).__name__}: {exc}")
            logger.debug("roastcoffea: %s failed", step, exc_info=True)
            return None

    def log_errors(self) -> None:
        """Log the collector errors not logged yet."""
        for message in self.errors[self._logged :]:
            logger.warning("roastcoffea: %s", message)
        self._logged = len(self.errors)


def empty_snapshot() -> dict[str, Any]:
    """A snapshot with nothing in it, for a collector whose snapshot failed."""
    return {
        "version": 1,
        "taken_at": 0.0,
        "started": 0.0,
        "workers": {},
        "tasks": [],
        "prefixes": {},
        "worker_tasks": {},
        "span_tasks": {},
        "digests": {},
        "spans": {},
        "records": [],
        "errors": {},
        "series": {},
        "counters": {},
    }
