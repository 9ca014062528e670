"""MetricsCollector: the user's context manager around a coffea run on Dask.

::

    with MetricsCollector(client) as mc:
        output, report = runner(fileset, processor_instance=proc, treename="Events")
        mc.set_coffea_report(report)
    mc.print_summary()
    mc.save_measurement("measurements/", "run1")
    mc.save_report("measurements/run1/report.html")

A facade: on entry it opens a :class:`~roastcoffea.block.Block` (the plugin
registered if the cluster has none, a Dask span ``"coffea-processing"``) and starts
the live view; on exit the block flushes every worker (no sleep: the flush returns
when the scheduler holds every digest and record), takes the snapshot of its span
subtree and time window, and builds its :class:`~roastcoffea.block.CollectedRun`
once, :attr:`MetricsCollector.run`. The metrics are computed from the run and what
the user adds (the coffea report) when first asked for, and again whenever an input
changed, so the order of the calls does not matter.

Which work is "its own": every task submitted from the thread that entered the
collector while the block runs carries the span and the run's annotation
(``dask.annotate`` keeps annotations in a ``contextvars.ContextVar``, so another
thread's submissions are not tagged; :func:`roastcoffea.plugin.run_span`). Dask
attaches spans per *task group*, and a task whose group already belongs to another
span joins it; the plugin puts such tasks back into the run that submitted them
(:mod:`roastcoffea.plugin.scheduler.runs`). So collectors in sequence or at the same
time, from threads or from other clients, each count their own tasks, chunks and
phases. The worker time series are cluster-wide and cover each collector's window.
"""

from __future__ import annotations

import asyncio
import html
import logging
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import distributed

import roastcoffea.config as config
from roastcoffea._gc import paused as paused_gc
from roastcoffea.block import SPAN_NAME, Block, CollectedRun
from roastcoffea.compat_0_1_2.collector import CollectorApi012
from roastcoffea.measurement import (
    NATIVE_STATE_FILE,
    measurement_metadata,
    record_files,
    unused_name,
)
from roastcoffea.measurement import save_measurement as _save_measurement
from roastcoffea.metrics import compute_metrics
from roastcoffea.metrics.departures import cluster_shape
from roastcoffea.plugin.client.calls import LiveFeed
from roastcoffea.report.live import LiveView, final_figures, is_terminal
from roastcoffea.report.live_notebook import NotebookLiveView, in_notebook
from roastcoffea.report.notebook import MetricsDict

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from roastcoffea.columnar import Table

logger = logging.getLogger(__name__)

#: The longest run name: Dask shows it in its span lists, the page in its runs table.
MAX_NAME = 200


class MetricsCollector(CollectorApi012, AbstractContextManager):
    """Collects the metrics of the work submitted inside its ``with`` block.

    With an asynchronous client (``Client(asynchronous=True)``), use ``async with``:
    the entry's and exit's round trips then run in a thread. The exit waits at most
    the settings ``roastcoffea.probe-timeout`` + ``roastcoffea.flush-timeout`` (15 s)
    for the scheduler, whatever the fault, and says what was lost.

    Parameters
    ----------
    client : distributed.Client
        A client of the cluster that runs the work, synchronous or not.
    backend : str, default "dask"
        Only ``"dask"`` is supported.
    track_workers : bool, default True
        Include worker metrics and ``tracking_data`` (the time series).
    worker_tracking_interval : float, optional
        Sampler interval in seconds of a plugin this collector registers (a running
        one keeps its own, noted in ``metrics["monitoring"]["notes"]``); default the
        setting ``roastcoffea.interval`` (1 s).
    processor_instance : coffea ProcessorABC, optional
        Not needed: processor tasks are found from what ran on the workers.
        Its class name is used only when no processor task was detected and
        it is one of the span's task prefixes.
    live : bool, default True
        Show the live view while the block runs: a panel in a terminal, an
        output updated in place in a Jupyter notebook.
    processor_prefixes : str or iterable of str, optional
        Task prefixes to count as the processor, overriding detection.
    name : str, default "coffea-processing"
        The run's name (its Dask span's): on the dashboard page and the live view.

    Attributes
    ----------
    run : CollectedRun or None
        What the exit took from the cluster (snapshot, records, profiles,
        departed workers); None until the block has exited.

    Raises
    ------
    ValueError
        For ``client=None``, an unknown backend, a blank or overlong ``name``, or
        an interval that is not a finite number of seconds >= 0.01.
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
        name: str = SPAN_NAME,
    ) -> None:
        if backend != "dask":
            raise ValueError(f"Unsupported backend: {backend}")
        self.client = _check_client(client)
        self.backend = backend
        self.track_workers, self.live = _flag("track_workers", track_workers), _flag("live", live)
        self.worker_tracking_interval = _interval(worker_tracking_interval)
        self.processor_instance = processor_instance
        self.processor_name = (
            None if processor_instance is None else type(processor_instance).__name__
        )
        self.processor_prefixes = _check_prefixes(processor_prefixes)
        self.name = _check_name(name)
        self._reset()

    def _reset(self) -> None:
        self.run: CollectedRun | None = None
        self._block: Block | None = None
        #: Chunk records of the block (the run's, then any given by hand).
        self.chunk_metrics: list[dict[str, Any]] = []
        #: Section records given to :meth:`record_section_metrics` (roastcoffea 0.1.2).
        self.section_metrics: list[dict[str, Any]] = []
        self.coffea_report: dict[str, Any] | None = None
        self.custom_metrics: dict[str, Any] | None = None
        self.live_view: LiveView | None = None
        #: Seconds the exit took (flush, snapshot, records; the live view's last frame).
        self.exit_seconds: float | None = None
        self.measurement_path: Path | None = None
        self._metrics: dict[str, Any] | None = None
        self._tracking: dict[str, Any] | None = None
        self._dirty = True

    # ---- the context manager ------------------------------------------------------

    def __enter__(self) -> MetricsCollector:
        """Register the plugin if absent, open the span, start the live view."""
        if self.client.asynchronous:
            raise RuntimeError(
                "MetricsCollector with an asynchronous client on its event loop: "
                "use `async with MetricsCollector(client)`"
            )
        self._open()
        self._entered().enter_span()
        self._start_live_view()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        """Close the span, flush, snapshot; never raises, never suppresses."""
        self._finish(self._entered().end())

    async def __aenter__(self) -> MetricsCollector:
        """As ``with``, for an asynchronous client (the span in the caller's context, where
        Dask keeps annotations; the round trips in a thread)."""
        await asyncio.to_thread(self._open)
        self._entered().enter_span()
        await asyncio.to_thread(self._start_live_view)
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        """As ``with``'s exit, for an asynchronous client; never raises."""
        await asyncio.to_thread(self._finish, self._entered().end())

    def _open(self) -> None:
        if self.active:
            raise RuntimeError("this MetricsCollector is already running")
        self._reset()
        self._block = Block(
            self.client,
            self.worker_tracking_interval,
            self.processor_prefixes,
            self.processor_name,
            self.name,
        )
        self._block.open()

    def _entered(self) -> Block:
        assert self._block is not None, "the block was not entered"
        return self._block

    def _start_live_view(self) -> None:
        view = LiveView if is_terminal() else NotebookLiveView if in_notebook() else None
        if self.live and view is not None:
            self.live_view = view(LiveFeed(self.client), title=f"roastcoffea: {self.name}")
            if not self.live_view.start():
                self._entered().notes.append(f"live view off: {self.live_view.off_reason}")

    def _finish(self, perf_end: float) -> None:
        """The exit: the block collects its run; a live view ends on the run's metrics (kept).
        Otherwise the metrics wait for :meth:`get_metrics`: the analysis goes on."""
        block = self._entered()
        self.run = block.collect()
        self.chunk_metrics[:0] = self.run.chunks
        self._dirty = True
        view = self.live_view
        if view is not None:
            final = block.guard("final live figures", self._final_figures)
            block.guard("stop live view", lambda: view.stop(final))
            block.log_errors()
        self.exit_seconds = time.perf_counter() - perf_end

    def _final_figures(self) -> dict[str, Any] | None:
        metrics = self._computed(self.coffea_report)
        if self.coffea_report is not None:
            self._metrics, self._dirty = metrics, False
        return final_figures(metrics, self.cluster_shape().get("workers") or 0)

    # ---- what the block is ----------------------------------------------------------

    @property
    def active(self) -> bool:
        """Whether the block is running (entered, not yet exited)."""
        return self._block is not None and self.run is None

    @property
    def wall_time(self) -> float | None:
        """Seconds the block took (``time.perf_counter``)."""
        return None if self.run is None else self.run.wall_time

    @property
    def span_id(self) -> str | None:
        """The Dask span of the block."""
        return None if self._block is None else self._block.span_id

    @property
    def snapshot(self) -> dict[str, Any] | None:
        """The plugin's snapshot of the block's span and window (None before the exit)."""
        return None if self.run is None else self.run.snapshot

    @property
    def notes(self) -> list[str]:
        """What the collector noticed (settings kept, the live view off, ...)."""
        return [] if self._block is None else list(self._block.notes)

    @property
    def collector_errors(self) -> list[str]:
        """What failed in the monitoring (never raised into the analysis)."""
        return [] if self._block is None else list(self._block.errors)

    def cluster_shape(self) -> dict[str, Any]:
        """Workers, threads and memory limits of the cluster at the end of the block."""
        return cluster_shape(None, 0) if self.run is None else self.run.cluster_shape()

    # ---- results --------------------------------------------------------------------

    def _computed(self, report: dict[str, Any] | None) -> MetricsDict:
        """The metrics of the run with ``report``, and what only the collector knows."""
        run = self._exited("compute metrics")
        prefixes = self._entered().prefix_override(run.snapshot, run.detected_prefixes)
        inputs = run.inputs(
            report, self.custom_metrics, self.chunk_metrics, prefixes, self.track_workers
        )
        with paused_gc():  # every metric at once: no garbage for the collector
            metrics = MetricsDict(compute_metrics(inputs))
        run.annotate(metrics)
        return metrics

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
        if self.run is None:
            raise RuntimeError("Timing not available - use within context manager")
        if self.coffea_report is None:
            raise RuntimeError("Coffea report not set - call set_coffea_report() first")
        if self._dirty or self._metrics is None:
            try:
                self._metrics, self._dirty = self._computed(self.coffea_report), False
            except Exception as exc:
                raise RuntimeError(
                    f"Metrics aggregation failed: {type(exc).__name__}: {exc}"
                ) from exc
        monitoring = self._metrics["monitoring"]
        monitoring["exit_seconds"] = self.exit_seconds
        if self.live_view is not None:
            monitoring["live_deltas"] = self.live_view.deltas
        return self._metrics

    def to_pandas(self, table: Table = "chunks") -> pd.DataFrame:
        """A table of the metrics as a DataFrame (:func:`roastcoffea.columnar.to_pandas`)."""
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
            state = html.escape(_state(self, exc))
            return f"<p><strong>roastcoffea MetricsCollector</strong>: {state}</p>"
        return render_summary(metrics, title=f"roastcoffea: {self.name}")

    def print_summary(self) -> None:
        """Print the answer, then the summary tables (RuntimeError as :meth:`get_metrics`)."""
        from roastcoffea.report.summary import print_summary

        print_summary(self.get_metrics())

    def save_measurement(
        self, output_dir: Path | str, measurement_name: str | None = None, overwrite: bool = False
    ) -> Path:
        """Save the metrics, the native state file of the span and the metadata.

        As :func:`roastcoffea.save_measurement`, with the run's times, state file,
        cluster shape, span and the collector's settings. ``measurement_name``
        defaults to the UTC time. A run is never lost to a name already taken: unless
        ``overwrite``, it is saved under the first free ``<name>-2``, ``<name>-3``, ...
        with a warning that says so (a script run twice keeps both runs).

        Returns
        -------
        pathlib.Path
            The measurement directory written.

        Raises
        ------
        RuntimeError
            Before the block exited, or as :meth:`get_metrics`.
        """
        run = self._exited("save measurement")
        if not overwrite:
            measurement_name = unused_name(output_dir, measurement_name)
        self.measurement_path = _save_measurement(
            self.get_metrics(),
            run.t_start,
            run.t_end,
            output_dir,
            measurement_name,
            native_state=run.native_state,
            metadata=run.metadata(self._settings()),
            overwrite=overwrite,
        )
        return self.measurement_path

    def save_report(self, path: Path | str, title: str | None = None) -> Path:
        """Write the self-contained HTML report of the metrics to ``path``.

        The report shows the metadata :meth:`save_measurement` writes; its measurement
        name is that of the measurement this collector last saved, else the file's stem.
        ``title`` defaults to ``"roastcoffea report: <name>"``.

        Raises
        ------
        RuntimeError
            Before the block exited, or as :meth:`get_metrics`.
        OSError
            When the file cannot be written.
        """
        from roastcoffea.report.html import write_report

        run = self._exited("save report")
        metrics, saved = self.get_metrics(), self.measurement_path
        metadata = measurement_metadata(
            Path(path).stem if saved is None else saved.name,
            run.t_start,
            run.t_end,
            native_file=NATIVE_STATE_FILE if saved and run.native_state else None,
            **record_files(saved),
            extra=run.metadata(self._settings()),
        )
        return write_report(path, metrics, metadata, t0=run.t_start, t1=run.t_end, title=title)

    def _exited(self, what: str) -> CollectedRun:
        if self.run is None:
            raise RuntimeError(f"Cannot {what} before context manager completes")
        return self.run

    def _settings(self) -> dict[str, Any]:
        return {
            "track_workers": self.track_workers,
            "worker_tracking_interval": self.worker_tracking_interval,
            "processor_prefixes": sorted(self.processor_prefixes or ()),
        }


def _check_client(client: Any) -> Any:
    if client is None:
        raise ValueError("MetricsCollector needs a distributed.Client, got client=None")
    if not isinstance(client, distributed.Client):
        raise TypeError(
            f"MetricsCollector needs a distributed.Client, got client of type "
            f"{type(client).__name__}"
        )
    return client


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, not {type(value).__name__}")
    return value


def _interval(value: Any) -> float:
    try:
        return config.check_interval(config.seconds("interval", value), "worker_tracking_interval")
    except TypeError as exc:
        raise ValueError(str(exc)) from None


def _state(collector: MetricsCollector, exc: RuntimeError) -> str:
    """Why a collector has no metrics to show yet."""
    if collector._block is None:
        return "not started"
    if collector.active:
        return "running"
    if collector.coffea_report is None:
        return "waiting for set_coffea_report()"
    return f"the metrics could not be computed: {exc}"


def _check_name(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"name must be a str, not {type(value).__name__}")
    if not value.strip() or len(value) > MAX_NAME:
        raise ValueError(f"name must be 1 to {MAX_NAME} characters, not blank: {value[:40]!r}")
    return value


def _check_prefixes(value: Any) -> set[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return {value}
    prefixes = set(value)
    if not all(isinstance(p, str) for p in prefixes):
        raise TypeError("processor_prefixes must be strings (Dask task prefixes)")
    return prefixes
