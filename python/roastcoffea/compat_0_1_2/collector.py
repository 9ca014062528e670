"""The members roastcoffea 0.1.2's ``MetricsCollector`` had that ours keeps for old code.

Its attributes, read from the block and its collected run (``t_start``, ``t_end``,
``span_info``, ``span_metrics``, ``metrics``, ``tracking_data``), and its ways to feed a
collector: the coffea report, and chunk and section records given by hand.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from roastcoffea.compat_0_1_2.names import OUTPUT_KEY

if TYPE_CHECKING:
    from roastcoffea.block import Block, CollectedRun

logger = logging.getLogger(__name__)


def _record_identity(record: dict[str, Any]) -> tuple:
    return (
        record.get("dataset"),
        record.get("file"),
        record.get("entry_start"),
        record.get("entry_stop"),
        record.get("t_start"),
    )


class CollectorApi012:
    """0.1.2's attributes of a collector, and its ways to feed one: the coffea report, chunk
    and section records given by hand, and the records 0.1.2's decorator put in coffea's
    output. ``MetricsCollector`` has them."""

    chunk_metrics: list[dict[str, Any]]
    #: Section records given to :meth:`record_section_metrics`.
    section_metrics: list[dict[str, Any]]
    run: CollectedRun | None
    track_workers: bool
    coffea_report: dict[str, Any] | None
    custom_metrics: dict[str, Any] | None
    _block: Block | None
    _tracking: dict[str, Any] | None
    _dirty: bool

    if TYPE_CHECKING:  # MetricsCollector's

        def get_metrics(self) -> dict[str, Any]: ...
        def _computed(self, report: dict[str, Any] | None) -> dict[str, Any]: ...

    @property
    def t_start(self) -> float | None:
        """Wall-clock epoch seconds of the block's start (None before it)."""
        return None if self._block is None else self._block.t_start

    @property
    def t_end(self) -> float | None:
        """Wall-clock epoch seconds of the block's end (None before it)."""
        return None if self.run is None else self.run.t_end

    @property
    def span_info(self) -> dict[str, Any] | None:
        """``{"name", "id"}`` of the block's span (roastcoffea 0.1.2)."""
        return (
            None if self._block is None else {"name": self._block.name, "id": self._block.span_id}
        )

    @property
    def span_metrics(self) -> dict[tuple, float] | None:
        """The span's digests summed over workers (roastcoffea 0.1.2's ``span_metrics``)."""
        return None if self.run is None else self.run.span_metrics

    @property
    def metrics(self) -> dict[str, Any] | None:
        """The metrics when they can be computed (exited, report set), else None."""
        try:
            return self.get_metrics()
        except RuntimeError:
            return None

    @property
    def tracking_data(self) -> dict[str, Any] | None:
        """Worker time series in roastcoffea 0.1.2's shape (None with ``track_workers=False``)."""
        if self.run is None or not self.track_workers:
            return None
        metrics = self.metrics
        if metrics is not None:
            return metrics.get("tracking_data")
        if self._tracking is None:
            try:
                self._tracking = self._computed(None).get("tracking_data")
            except Exception:
                logger.debug("roastcoffea: tracking data not computed", exc_info=True)
        return self._tracking

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

    def record_chunk_metrics(self, chunk_data: dict[str, Any]) -> None:
        """Add a chunk record made elsewhere (roastcoffea 0.1.2's decorator called this).

        Parameters
        ----------
        chunk_data : dict
            A chunk record (keys of docs/metrics.md, "Chunk records"); counted
            like the records the worker plugin delivers.
        """
        self.chunk_metrics.append(chunk_data)
        self._dirty = True

    def record_section_metrics(self, section_data: dict[str, Any]) -> None:
        """Keep a section record in :attr:`section_metrics`, as roastcoffea 0.1.2 did.

        The metrics do not read these: the sections of ``track_time``,
        ``track_memory`` and ``track_bytes`` travel in the chunk records.

        Parameters
        ----------
        section_data : dict
            The section's data, kept as given.
        """
        self.section_metrics.append(section_data)

    def extract_metrics_from_output(self, output: Any) -> None:
        """Take chunk records a roastcoffea 0.1.2 decorator put in coffea's output.

        Pops ``output["__roastcoffea_metrics__"]`` and adds the records not
        already received through the plugin. Without that key (roastcoffea's
        own ``track_metrics`` never writes it) this does nothing. Works before
        or after the block exits.

        Parameters
        ----------
        output : Any
            The output of ``Runner``; anything but a dict is ignored.
        """
        if not isinstance(output, dict) or OUTPUT_KEY not in output:
            return
        found = output.pop(OUTPUT_KEY)
        if not isinstance(found, list):
            logger.warning(
                "Metrics not a list in output[%r] (%s); ignored", OUTPUT_KEY, type(found).__name__
            )
            return
        known = {_record_identity(r) for r in self.chunk_metrics}
        for record in found:
            if isinstance(record, dict) and _record_identity(record) not in known:
                known.add(_record_identity(record))
                self.chunk_metrics.append(record)
        self._dirty = True
