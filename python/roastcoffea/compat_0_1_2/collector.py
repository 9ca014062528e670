"""The members roastcoffea 0.1.2's ``MetricsCollector`` had that ours keeps for old code."""

from __future__ import annotations

import logging
from typing import Any

from roastcoffea.compat_0_1_2.names import OUTPUT_KEY

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
    """0.1.2's way to feed a collector: chunk and section records given by hand, and the
    records 0.1.2's decorator put in coffea's output. ``MetricsCollector`` has them."""

    chunk_metrics: list[dict[str, Any]]
    #: Section records given to :meth:`record_section_metrics`.
    section_metrics: list[dict[str, Any]]
    _dirty: bool

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
