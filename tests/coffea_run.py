"""A coffea run on a Dask cluster inside a MetricsCollector, as the integration tests make it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coffea import processor
from coffea.nanoevents import NanoAODSchema
from distributed import Client

from roastcoffea import MetricsCollector
from roastcoffea.demo.nanoaod import TREE

__all__ = ["TREE", "CollectedRun", "collected_run"]


@dataclass
class CollectedRun:
    """The collector (closed), the run's output and coffea's report."""

    mc: MetricsCollector
    output: Any
    report: dict[str, Any]

    @property
    def durations(self) -> dict[str, float]:
        """Each chunk's task duration by task key, from the chunk records."""
        return {c["task_key"]: c["task_duration"] for c in self.mc.chunk_metrics}


def collected_run(
    client: Client, fileset: dict[str, Any], proc: processor.ProcessorABC, chunksize: int
) -> CollectedRun:
    """``Runner`` + ``DaskExecutor`` with NanoAODSchema (its missing-crossref warnings off)
    on ``fileset``, inside ``MetricsCollector(client)``; the collector raised nothing."""
    warn = NanoAODSchema.warn_missing_crossrefs
    NanoAODSchema.warn_missing_crossrefs = False
    runner = processor.Runner(
        executor=processor.DaskExecutor(client=client, status=False),
        schema=NanoAODSchema,
        chunksize=chunksize,
        savemetrics=True,
    )
    try:
        with MetricsCollector(client) as mc:
            output, report = runner(fileset, processor_instance=proc, treename=TREE)
            mc.set_coffea_report(report)
    finally:
        NanoAODSchema.warn_missing_crossrefs = warn
    assert mc.collector_errors == []
    return CollectedRun(mc, output, report)
