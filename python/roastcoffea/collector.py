"""MetricsCollector: the user's context manager around a coffea run on Dask.

::

    with MetricsCollector(client) as mc:
        output, report = runner(fileset, processor_instance=proc, treename="Events")
        mc.set_coffea_report(report)
    mc.print_summary()
    mc.save_measurement("measurements/", "run1")
    mc.save_report("measurements/run1/report.html")

On entry it registers :class:`~roastcoffea.plugin.RoastPlugin` if the cluster
has none, opens a Dask span ``"coffea-processing"`` and starts the live view.
On exit it closes the span, flushes every worker (no sleep: the flush returns
when the scheduler holds every digest and record), takes the snapshot of its
span subtree and time window, and selects its chunk records. The metrics are
computed from these, lazily, whenever an input changed (a report set, records
extracted from an output), so the order of the calls does not matter.

Which work is "its own": every task submitted from the thread that entered the
collector while the block runs carries the span and the run's annotation
(``dask.annotate`` keeps annotations in a ``contextvars.ContextVar``, so another
thread's submissions are not tagged; :func:`roastcoffea.plugin.run_span`). Dask
attaches spans per *task group* (the task key's name before its token, e.g. the
processor class or coffea's ``reduce``), and a task whose group already belongs
to another span joins it; the plugin puts such tasks back into the run that
submitted them (``roastcoffea.plugin.scheduler.runs``). So collectors in sequence or at
the same time, from threads or from other clients, each count their own tasks,
chunks and phases, whatever their processor classes. The worker time series are
cluster-wide and cover each collector's time window.
"""

from __future__ import annotations

import asyncio
import html
import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import distributed

import roastcoffea.config as config
from roastcoffea._gc import paused as paused_gc
from roastcoffea._native import decode_exit_snapshot
from roastcoffea.columnar import Table
from roastcoffea.compat_0_1_2.collector import CollectorApi012
from roastcoffea.measurement import CHUNKS_FILE, NATIVE_STATE_FILE, measurement_metadata
from roastcoffea.measurement import save_measurement as _save_measurement
from roastcoffea.metrics import MetricsInputs, compute_metrics
from roastcoffea.metrics.departures import cluster_shape, sort_departures
from roastcoffea.metrics.fine import span_metrics
from roastcoffea.plugin.client.calls import LiveFeed
from roastcoffea.plugin.client.profiles import ProfileRequest
from roastcoffea.plugin.client.run import run_span
from roastcoffea.plugin.client.session import (
    WINDOW_PAD,
    ExitDeadline,
    check_reachable,
    finish_session,
    open_session,
)
from roastcoffea.records import decode_records, drain_local_records, records_by_kind
from roastcoffea.report.live import LiveView, is_terminal, largest_share
from roastcoffea.report.live_notebook import NotebookLiveView, in_notebook
from roastcoffea.report.notebook import MetricsDict

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

logger = logging.getLogger(__name__)

#: Name of the Dask span a collector opens.
SPAN_NAME = "coffea-processing"


def _check_client(client: Any) -> Any:
    if client is None:
        raise ValueError("MetricsCollector needs a distributed.Client, got client=None")
    if not isinstance(client, distributed.Client):
        raise TypeError(
            f"MetricsCollector needs a distributed.Client, got client of type "
            f"{type(client).__name__}"
        )
    return client


def _check_prefixes(value: Any) -> set[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return {value}
    prefixes = set(value)
    if not all(isinstance(p, str) for p in prefixes):
        raise TypeError("processor_prefixes must be strings (Dask task prefixes)")
    return prefixes


class MetricsCollector(CollectorApi012, AbstractContextManager):
    """Collects the metrics of the work submitted inside its ``with`` block.

    With an asynchronous client (``Client(asynchronous=True)``), use
    ``async with MetricsCollector(client)``: the scheduler round trips of the
    entry and the exit run in a thread, so the event loop keeps serving the
    client meanwhile.

    Parameters
    ----------
    client : distributed.Client
        A client of the cluster that runs the work, synchronous or not.
    backend : str, default "dask"
        Only ``"dask"`` is supported.
    track_workers : bool, default True
        Include worker metrics and ``tracking_data`` (the time series).
    worker_tracking_interval : float, optional
        Sampler interval in seconds, used when this collector registers the
        plugin (an already registered plugin keeps its own; the collector
        notes it in ``metrics["monitoring"]["notes"]``). Default the setting
        ``roastcoffea.interval`` (1 s). The exit waits at most the settings
        ``roastcoffea.probe-timeout`` + ``roastcoffea.flush-timeout`` (15 s) for
        the scheduler, whatever the fault, and says what was lost.
    processor_instance : coffea ProcessorABC, optional
        Not needed: processor tasks are found from what ran on the workers.
        Its class name is used only when no processor task was detected and
        it is one of the span's task prefixes.
    live : bool, default True
        Show the live view while the block runs: a panel in a terminal, an
        output updated in place in a Jupyter notebook.
    processor_prefixes : str or iterable of str, optional
        Task prefixes to count as the processor, overriding detection.

    Raises
    ------
    ValueError
        For ``client=None``, an unknown backend, or an interval that is not a
        finite number of seconds >= 0.01.
    TypeError
        For a client that is not a ``distributed.Client``, or other arguments
        of the wrong type.
    """

    def __init__(
        self,
        client: distributed.Client,
        backend: str = "dask",
        track_workers: bool = True,
        worker_tracking_interval: float | None = None,
        processor_instance: Any = None,
        *,
        live: bool = True,
        processor_prefixes: str | set[str] | list[str] | None = None,
    ) -> None:
        if backend != "dask":
            raise ValueError(f"Unsupported backend: {backend}")
        self.client = _check_client(client)
        self.backend = backend
        if not isinstance(track_workers, bool):
            raise TypeError(f"track_workers must be a bool, not {type(track_workers).__name__}")
        if not isinstance(live, bool):
            raise TypeError(f"live must be a bool, not {type(live).__name__}")
        self.track_workers = track_workers
        try:
            interval = config.check_interval(
                config.seconds("interval", worker_tracking_interval), "worker_tracking_interval"
            )
        except TypeError as exc:
            raise ValueError(str(exc)) from None
        self.worker_tracking_interval = interval
        self.processor_instance = processor_instance
        self.processor_name = (
            type(processor_instance).__name__ if processor_instance is not None else None
        )
        self.processor_prefixes = _check_prefixes(processor_prefixes)
        self.live = live
        self._reset()

    def _reset(self) -> None:
        self.t_start: float | None = None
        self.t_end: float | None = None
        self.wall_time: float | None = None
        self.span_id: str | None = None
        self.span_info: dict[str, Any] | None = None
        self.span_ids: set[str] = set()
        self.span_metrics: dict[tuple, float] | None = None
        self.chunk_metrics: list[dict[str, Any]] = []
        self.phase_records: list[dict[str, Any]] = []
        #: Section records given to :meth:`record_section_metrics` (roastcoffea 0.1.2).
        self.section_metrics: list[dict[str, Any]] = []
        self.detected_prefixes: set[str] = set()
        #: Dask's profile of the processor tasks in the window: {worker: {prefix: tree}}.
        self.profiles: dict[str, dict[str, Any]] | None = None
        self._profile_reason: str | None = "the block has not ended"
        self.coffea_report: dict[str, Any] | None = None
        self.custom_metrics: dict[str, Any] | None = None
        self.snapshot: dict[str, Any] | None = None
        #: Bytes of the snapshot the scheduler sent at exit.
        self.snapshot_size: int | None = None
        #: The native state file text of the snapshot (what save_measurement writes).
        self.native_state: str | None = None
        self.lost_workers: list[dict[str, Any]] = []
        self.retired_workers: list[dict[str, Any]] = []
        self.restarted_workers: list[dict[str, Any]] = []
        self.unmonitored_workers: list[dict[str, str]] = []
        self._unmonitored: dict[str, str] = {}
        self._departures: list[dict[str, Any]] = []
        self.collector_errors: list[str] = []
        self._logged = 0
        self.notes: list[str] = []
        self.plugin_interval: float | None = None
        self.live_view: LiveView | None = None
        self._perf_start: float | None = None
        self._span_cm: AbstractContextManager | None = None
        self._window: tuple[float, float] = (0.0, 0.0)
        self._flush_seconds: float | None = None
        self._exit_seconds: float | None = None
        self._records_skipped = 0
        self._records_lost: dict[str, int] = {}
        self._metrics: dict[str, Any] | None = None
        self._metrics_error: str | None = None
        self._tracking: dict[str, Any] | None = None
        self._dirty = True
        self._active = False
        self.measurement_path: Path | None = None

    # ---- the context manager ----------------------------------------------------

    def __enter__(self) -> MetricsCollector:
        """Register the plugin if absent, open the span, start the live view."""
        if self.client.asynchronous:
            raise RuntimeError(
                "MetricsCollector with an asynchronous client on its event loop: "
                "use `async with MetricsCollector(client)`"
            )
        self._open()
        self._enter_span()
        self._start_live_view()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        """Close the span, flush, snapshot; never raises, never suppresses."""
        perf_end = self._stop_clock()
        self._guard("close span", self._close_span)
        self._finish(perf_end)

    async def __aenter__(self) -> MetricsCollector:
        """As ``with``, for an asynchronous client.

        The span is entered here, in the caller's context, because Dask keeps
        annotations in a context variable; the round trips run in a thread.
        """
        await asyncio.to_thread(self._open)
        self._enter_span()
        await asyncio.to_thread(self._start_live_view)
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        """As ``with``'s exit, for an asynchronous client; never raises."""
        perf_end = self._stop_clock()
        self._guard("close span", self._close_span)
        await asyncio.to_thread(self._finish, perf_end)

    def _open(self) -> None:
        if self._active:
            raise RuntimeError("this MetricsCollector is already running")
        self._reset()
        self._active = True
        # Monitoring never stops the analysis: without a plugin the block still
        # runs, and the exit reports what is missing.
        sched_time = self._guard("register plugin", self._ensure_plugin)
        self._log_errors()
        self.t_start = time.time()
        self._perf_start = time.perf_counter()
        self._window = (min(self.t_start, sched_time or self.t_start) - WINDOW_PAD, 0.0)

    def _enter_span(self) -> None:
        self._span_cm = run_span(self.client, SPAN_NAME)
        self.span_id = self._span_cm.__enter__()
        self.span_info = {"name": SPAN_NAME, "id": self.span_id, "context": self._span_cm}

    def _start_live_view(self) -> None:
        view = LiveView if is_terminal() else NotebookLiveView if in_notebook() else None
        if self.live and view is not None:
            self.live_view = view(LiveFeed(self.client), title=f"roastcoffea: {SPAN_NAME}")
            if not self.live_view.start():
                self.notes.append(f"live view off: {self.live_view.off_reason}")

    def _stop_clock(self) -> float:
        """End the block's clocks; the perf_counter reading the exit's cost starts from."""
        perf_end = time.perf_counter()
        self._active = False
        self.t_end = time.time()
        self.wall_time = perf_end - (self._perf_start or perf_end)
        return perf_end

    def _finish(self, perf_end: float) -> None:
        """What the exit waits for: everything the metrics need from the cluster.

        The flush and snapshot, with the workers' profiles asked for beside them, and
        the records decoded. The metrics are computed when first asked for
        (:meth:`get_metrics`): the analysis goes on without waiting for them.
        """
        self._window = (self._window[0], (self.t_end or time.time()) + WINDOW_PAD)
        profiles = self._guard("profile request", self._request_profiles)
        self._guard("snapshot", self._take_snapshot)
        with paused_gc():  # builds every record at once: no garbage for the collector
            if self.snapshot is not None:
                self._guard("decode records", self._select_records)
                self._guard("profile", lambda: self._take_profiles(profiles))
                self._guard("span metrics", self._compute_span_metrics)
                self._guard("worker departures", self._sort_workers)
            view = self.live_view
            if view is not None:
                final = self._guard("final live figures", self._final_live_figures)
                self._guard("stop live view", lambda: view.stop(final))
        self._dirty = True
        self._exit_seconds = time.perf_counter() - perf_end
        self._log_errors()

    def _log_errors(self) -> None:
        for message in self.collector_errors[self._logged :]:
            logger.warning("roastcoffea: %s", message)
        self._logged = len(self.collector_errors)

    def _guard(self, step: str, func: Callable[[], Any]) -> Any:
        try:
            return func()
        except Exception as exc:
            self.collector_errors.append(f"{step}: {type(exc).__name__}: {exc}")
            logger.debug("roastcoffea: %s failed", step, exc_info=True)
            return None

    # ---- entry steps --------------------------------------------------------------

    def _ensure_plugin(self) -> float | None:
        """Register RoastPlugin when absent; sample once. Returns the scheduler's clock."""
        info = open_session(self.client, self.worker_tracking_interval, self.notes)
        if info is None:
            return None
        self.plugin_interval = info["interval"]
        if info["interval"] != self.worker_tracking_interval:
            self.notes.append(
                f"RoastPlugin already registered with interval {info['interval']} s; "
                f"kept it (worker_tracking_interval={self.worker_tracking_interval} not applied)"
            )
        if not info["live"]:
            self.notes.append("RoastPlugin registered with live=False: no live view data")
        if not info["phases"]:
            self.notes.append("RoastPlugin registered with phases=False: no phase metrics")
        return info["time"]

    # ---- exit steps ---------------------------------------------------------------

    def _close_span(self) -> None:
        cm, self._span_cm = self._span_cm, None
        if cm is not None:
            cm.__exit__(None, None, None)
        if self.span_info is not None:
            self.span_info.pop("context", None)

    def _take_snapshot(self) -> None:
        """Sample, flush and snapshot in one scheduler call."""
        assert self.span_id is not None
        t_from, t_to = self._window
        deadline = ExitDeadline(config.seconds("probe-timeout"), config.seconds("flush-timeout"))
        check_reachable(self.client, deadline)
        reply = finish_session(
            self.client, self.span_id, SPAN_NAME, (t_from, t_to), deadline, self.notes
        )
        self._window = (t_from, reply["t_to"])
        self._flush_seconds = reply["flush_seconds"]
        for address, message in reply["flush"].get("errors", {}).items():
            self.collector_errors.append(f"flush {address}: {message}")
        self._unmonitored = reply["flush"].get("unmonitored", {})
        self._departures = reply["flush"].get("departures", [])
        data = reply["snapshot"]
        if not isinstance(data, bytes):
            raise RuntimeError(f"the scheduler answered {type(data).__name__} to a snapshot")
        self.snapshot_size = len(data)
        with paused_gc():  # decoded once: the data, and the state a measurement keeps
            self.snapshot, self.native_state = decode_exit_snapshot(data)
        self.span_ids = {self.span_id, *self.snapshot["spans"]}

    def _select_records(self) -> None:
        assert self.snapshot is not None
        records = decode_records(self.snapshot["records"])
        self._records_skipped = records.skipped
        records.extend(drain_local_records(self.span_ids))
        selected = records_by_kind(records)
        self.chunk_metrics = selected.chunks + self.chunk_metrics
        self.phase_records = selected.phases
        self.detected_prefixes = selected.prefixes
        self._records_lost = selected.lost

    def _request_profiles(self) -> ProfileRequest | None:
        """Ask every worker for Dask's profile of the block, beside the flush and snapshot."""
        if not config.setting("hot-lines"):
            self._profile_reason = "hot lines are off (roastcoffea.hot-lines: false)"
            return None
        most = config.whole_number("hot-lines-workers", config.setting("hot-lines-workers"), 1)
        t_to = (self.t_end or time.time()) + WINDOW_PAD
        return ProfileRequest(self.client, self._window[0], t_to, most)

    def _take_profiles(self, request: ProfileRequest | None) -> None:
        """Keep the processor prefixes' profiles (Dask's own sampling).

        A failure is a note and the reason of the hot lines: the rest of the exit goes on.
        """
        if request is None:
            return
        prefixes = self._prefix_override() or self.detected_prefixes
        try:
            profiles, failed = request.result(config.seconds("probe-timeout"))
        except Exception as exc:
            reason = f"Dask's profile was not fetched: {type(exc).__name__}: {exc}"
            self._profile_reason = reason
            self.notes.append(reason)
            return
        for worker, error in failed.items():
            self.notes.append(f"no profile of worker {worker}: {error}")
        if not prefixes:
            self._profile_reason = "no processor task prefix was seen"
            return
        self.profiles = {
            worker: {p: tree for p, tree in trees.items() if p in prefixes}
            for worker, trees in profiles.items()
        }
        self._profile_reason = None

    def _final_live_figures(self) -> dict[str, Any] | None:
        """The whole block's figures for the live view's last frame, from the final flush.

        Events and bytes from coffea's report when it is already set, else from
        the chunk records, else (events only) from the phase records; tasks
        from the run's task statistics; rates over the block's wall time.
        """
        if self.snapshot is None or not self.wall_time:
            return None
        good = [r for r in self.chunk_metrics if not r.get("error")]
        report = self.coffea_report or {}
        if report:
            events, nbytes = int(report.get("entries") or 0), float(report.get("bytesread") or 0)
        elif good:
            events = sum(int(r.get("num_events") or 0) for r in good)
            nbytes = sum(float(r.get("bytes_read") or 0) for r in good)
        else:
            events = sum(
                int(r["entry_stop"]) - int(r["entry_start"])
                for r in self.phase_records
                if r.get("entry_stop") is not None and r.get("entry_start") is not None
            )
            nbytes = 0.0
        phases: dict[str, float] = {}
        for record in self.phase_records:
            for phase, seconds in (record.get("wall") or {}).items():
                if isinstance(seconds, (int, float)):
                    phases[phase] = phases.get(phase, 0.0) + seconds
        rows = [r for r in self.snapshot["tasks"] if r.get("span") in self.span_ids]
        shape = self.cluster_shape()
        return {
            "events_per_s": events / self.wall_time,
            "gbps": nbytes * 8 / 1e9 / self.wall_time if nbytes else None,
            "chunks_per_s": None,
            "transitions_per_s": None,
            "workers": shape.get("workers") or 0,
            "memory_bytes": None,
            "dominant_phase": largest_share(phases),
            "tasks": sum(int(r.get("tasks", 0)) for r in rows),
            "erred": sum(int(r.get("erred", 0)) for r in rows),
            "chunks": len(good) if good else len(self.phase_records),
            "events": events,
            "bytes": nbytes,
            "elapsed": self.wall_time,
        }

    def _compute_span_metrics(self) -> None:
        assert self.snapshot is not None
        self.span_metrics = span_metrics(self.snapshot)

    def _sort_workers(self) -> None:
        """Workers of the window that died, were retired, came back, or ran unmonitored."""
        assert self.snapshot is not None
        sorted_ = sort_departures(
            self._departures, self.snapshot["workers"], self._window, self._unmonitored
        )
        self.lost_workers, self.retired_workers = sorted_.lost, sorted_.retired
        self.restarted_workers, self.unmonitored_workers = sorted_.restarted, sorted_.unmonitored

    # ---- inputs ---------------------------------------------------------------------

    def set_coffea_report(
        self, report: dict[str, Any], custom_metrics: dict[str, Any] | None = None
    ) -> None:
        """Give the coffea report (``Runner(savemetrics=True)``), before or after exit.

        Parameters
        ----------
        report : dict
            coffea's metrics: ``bytesread``, ``entries``, ``processtime``,
            ``chunks``, ``columns``.
        custom_metrics : dict, optional
            ``{dataset: {"entries", "duration", "performance_counters":
            {"num_requested_bytes"}}}``, as in roastcoffea 0.1.2.
        """
        if not isinstance(report, dict):
            raise TypeError(f"report must be a dict, not {type(report).__name__}")
        if custom_metrics is not None and not isinstance(custom_metrics, dict):
            raise TypeError(f"custom_metrics must be a dict, not {type(custom_metrics).__name__}")
        self.coffea_report = report
        self.custom_metrics = custom_metrics
        self._dirty = True

    # ---- results --------------------------------------------------------------------

    def _prefix_override(self) -> set[str] | None:
        """The processor prefixes given, or the processor's name when nothing was detected."""
        if (
            self.processor_prefixes is None
            and not self.detected_prefixes
            and self.processor_name is not None
            and self.snapshot is not None
            and self.processor_name in self.snapshot["prefixes"]
        ):
            return {self.processor_name}
        return self.processor_prefixes

    def _inputs(self, report: dict[str, Any] | None) -> MetricsInputs:
        assert self.t_start is not None and self.t_end is not None
        override = self._prefix_override()
        return MetricsInputs(
            snapshot=self.snapshot if self.snapshot is not None else _empty_snapshot(),
            t_start=self._window[0],
            t_end=max(self._window),
            wall_time=self.wall_time if self.wall_time is not None else 0.0,
            coffea_report=report,
            custom_metrics=self.custom_metrics,
            chunks=list(self.chunk_metrics),
            phases=list(self.phase_records),
            processor_prefixes=override,
            detected_prefixes=set(self.detected_prefixes),
            track_workers=self.track_workers,
            profiles=self.profiles,
            profile_reason=self._profile_reason,
        )

    def _refresh(self) -> None:
        """Recompute the metrics from the current inputs."""
        self._dirty = False
        self._metrics = None
        try:
            with paused_gc():  # every metric at once: no garbage for the collector
                metrics = MetricsDict(compute_metrics(self._inputs(self.coffea_report)))
        except Exception as exc:
            self._metrics_error = f"{type(exc).__name__}: {exc}"
            raise
        self._metrics_error = None
        self._add_collector_view(metrics)
        self._metrics = metrics

    def _add_collector_view(self, metrics: dict[str, Any]) -> None:
        """What only the collector knows: lost workers, its own errors and costs."""
        metrics.setdefault("lost_workers", list(self.lost_workers))
        metrics.setdefault("retired_workers", list(self.retired_workers))
        metrics.setdefault("restarted_workers", list(self.restarted_workers))
        metrics.setdefault("unmonitored_workers", list(self.unmonitored_workers))
        metrics["span_info"] = {"name": SPAN_NAME, "id": self.span_id}
        monitoring = metrics.setdefault("monitoring", {})
        monitoring["collector_errors"] = list(self.collector_errors)
        monitoring["notes"] = list(self.notes)
        monitoring["flush_seconds"] = self._flush_seconds
        monitoring["exit_seconds"] = self._exit_seconds
        monitoring["snapshot_bytes"] = self.snapshot_size
        monitoring["records_skipped"] = self._records_skipped
        monitoring["records_lost"] = dict(self._records_lost)
        monitoring["plugin_interval"] = self.plugin_interval
        if self.live_view is not None:
            monitoring["live_deltas"] = self.live_view.deltas
        unavailable = metrics.setdefault("unavailable", {})
        if self.snapshot is None:
            unavailable.setdefault("snapshot", "no snapshot: " + "; ".join(self.collector_errors))
        if self._flush_seconds is None:
            unavailable.setdefault("flush_seconds", "the flush did not complete")

    def _check_ready(self) -> None:
        if self.t_start is None or self.t_end is None or self._active:
            raise RuntimeError("Timing not available - use within context manager")
        if self.coffea_report is None:
            raise RuntimeError("Coffea report not set - call set_coffea_report() first")

    def get_metrics(self) -> dict[str, Any]:
        """The metrics dictionary (see docs/metrics.md), recomputed when an input changed.

        Returns
        -------
        dict

        Raises
        ------
        RuntimeError
            Before the block has exited ("Timing not available - use within
            context manager"), without a report ("Coffea report not set - call
            set_coffea_report() first"), or when the computation fails.
        """
        self._check_ready()
        if self._dirty or self._metrics is None:
            try:
                self._refresh()
            except Exception as exc:
                raise RuntimeError(f"Metrics aggregation failed: {self._metrics_error}") from exc
        assert self._metrics is not None
        return self._metrics

    @property
    def metrics(self) -> dict[str, Any] | None:
        """The metrics when they can be computed (exited, report set), else None."""
        try:
            return self.get_metrics()
        except RuntimeError:
            return None

    def to_pandas(self, table: Table = "chunks") -> pd.DataFrame:
        """The chunk records, phases or per-worker table as a pandas DataFrame.

        See :func:`roastcoffea.columnar.to_pandas`; needs the metrics
        (:meth:`get_metrics`).
        """
        from roastcoffea.columnar import to_pandas

        return to_pandas(self.get_metrics(), table)

    def to_arrow(self, table: Table = "chunks") -> pa.Table:
        """As :meth:`to_pandas`, a pyarrow Table."""
        from roastcoffea.columnar import to_arrow

        return to_arrow(self.get_metrics(), table)

    def _repr_html_(self) -> str:
        """Jupyter's view: the summary once the metrics are computed, else the state, or why not."""
        from roastcoffea.report.html import render_summary

        try:
            metrics = self.get_metrics()
        except RuntimeError as exc:
            if self.t_start is None:
                state = "not started"
            elif self._active:
                state = "running"
            elif self.coffea_report is None:
                state = "waiting for set_coffea_report()"
            else:
                state = f"the metrics could not be computed: {exc}"
            return f"<p><strong>roastcoffea MetricsCollector</strong>: {html.escape(state)}</p>"
        return render_summary(metrics, title=f"roastcoffea: {SPAN_NAME}")

    @property
    def tracking_data(self) -> dict[str, Any] | None:
        """Worker time series in roastcoffea 0.1.2's shape (None with ``track_workers=False``)."""
        if self.t_end is None or self._active or not self.track_workers:
            return None
        metrics = self.metrics
        if metrics is not None:
            return metrics.get("tracking_data")
        if self._tracking is None:
            try:
                self._tracking = compute_metrics(self._inputs(None)).get("tracking_data")
            except Exception:
                logger.debug("roastcoffea: tracking data not computed", exc_info=True)
        return self._tracking

    def cluster_shape(self) -> dict[str, Any]:
        """Workers, threads and memory limits of the cluster at the end of the block
        (:func:`roastcoffea.metrics.departures.cluster_shape`)."""
        return cluster_shape(self.snapshot, len(self.lost_workers))

    def print_summary(self) -> None:
        """Print the rich tables of the metrics.

        Raises
        ------
        RuntimeError
            As :meth:`get_metrics`.
        """
        from roastcoffea.report.summary import print_summary

        print_summary(self.get_metrics())

    def save_measurement(
        self,
        output_dir: Path | str,
        measurement_name: str | None = None,
        overwrite: bool = False,
    ) -> Path:
        """Save the metrics, the native state file of the span and the metadata.

        Parameters
        ----------
        output_dir : path-like
        measurement_name : str, optional
            Default: the UTC time.
        overwrite : bool, default False

        Returns
        -------
        pathlib.Path
            The measurement directory written.

        Raises
        ------
        RuntimeError
            Before the block exited, or as :meth:`get_metrics`.
        FileExistsError
            When the measurement exists and ``overwrite`` is False.
        """
        if self.t_start is None or self.t_end is None or self._active:
            raise RuntimeError("Cannot save measurement before context manager completes")
        self.measurement_path = _save_measurement(
            self.get_metrics(),
            self.t_start,
            self.t_end,
            output_dir,
            measurement_name,
            native_state=self.native_state,
            metadata=self._run_metadata(),
            overwrite=overwrite,
        )
        return self.measurement_path

    def _run_metadata(self) -> dict[str, Any]:
        """What the collector adds to a measurement's metadata: cluster, span, settings."""
        return {
            "cluster": self.cluster_shape(),
            "span": {"name": SPAN_NAME, "id": self.span_id},
            "collector": {
                "track_workers": self.track_workers,
                "worker_tracking_interval": self.worker_tracking_interval,
                "plugin_interval": self.plugin_interval,
                "processor_prefixes": sorted(self.processor_prefixes or ()),
            },
        }

    def save_report(self, path: Path | str, title: str | None = None) -> Path:
        """Write the self-contained HTML report of the metrics.

        The report shows the metadata :meth:`save_measurement` writes (software
        versions, cluster shape, span, settings). Its measurement name is that
        of the measurement this collector last saved, else the file's stem.

        Parameters
        ----------
        path : path-like
            The HTML file; parent directories are created.
        title : str, optional
            Page title; default ``"roastcoffea report: <name>"``.

        Returns
        -------
        pathlib.Path
            The report written (``path``).

        Raises
        ------
        RuntimeError
            Before the block exited, or as :meth:`get_metrics`.
        OSError
            When the file cannot be written.
        """
        from roastcoffea.report.html import write_report

        if self.t_start is None or self.t_end is None or self._active:
            raise RuntimeError("Cannot save report before context manager completes")
        metrics = self.get_metrics()
        saved = self.measurement_path
        name = saved.name if saved is not None else Path(path).stem
        native_file = NATIVE_STATE_FILE if saved is not None and self.native_state else None
        chunks_file = CHUNKS_FILE if saved is not None and (saved / CHUNKS_FILE).exists() else None
        metadata = measurement_metadata(
            name,
            self.t_start,
            self.t_end,
            native_file=native_file,
            chunks_file=chunks_file,
            extra=self._run_metadata(),
        )
        return write_report(path, metrics, metadata, t0=self.t_start, t1=self.t_end, title=title)


def _empty_snapshot() -> dict[str, Any]:
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
