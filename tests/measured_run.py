"""One real measurement shared by the plot, report and command tests.

A MetricsCollector measures coffea's ``Runner`` + ``DaskExecutor`` on the
session cluster over the three CMS files of tests/data (three datasets, small chunks),
and saves the measurement. Everything in it is real; nothing is made up.
"""

from __future__ import annotations

import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import awkward as ak
import cloudpickle
from coffea import processor
from coffea.nanoevents import NanoAODSchema
from distributed import Client

from roastcoffea import MetricsCollector, track_bytes, track_memory, track_metrics, track_time

# The processor travels to the workers by value, whatever their sys.path.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

#: Datasets of the measured run and their CMS files.
DATASETS = {
    "dy": "nano_dy.root",
    "dimuon": "nano_dimuon.root",
    "ttbar": "nanoAOD_2015_CMS_Open_Data_ttbar.root",
}

#: Events per chunk: 4 + 4 + 20 chunks.
CHUNKSIZE = 10

#: Seconds each chunk sleeps, so the run spans several sampler ticks.
NAP = 0.15


class MeasuredProcessor(processor.ProcessorABC):
    """Muon and jet sums with timed, memory and byte sections, and a nap."""

    @track_metrics
    def process(self, events: Any) -> dict[str, Any]:
        with track_time(self, "select"):
            muons = events.Muon[events.Muon.pt > 5]
        with track_bytes(self, events, "jets"):
            jet_pt = float(ak.sum(events.Jet.pt))
        with track_memory(self, "count"):
            n_muons = int(ak.sum(ak.num(muons)))
        time.sleep(NAP)
        return {"events": len(events), "muons": n_muons, "jet_pt": jet_pt}

    def postprocess(self, accumulator: Any) -> Any:
        return accumulator


@dataclass
class Measured:
    """A measured run: the collector, its metrics and the saved measurement."""

    collector: MetricsCollector
    metrics: dict[str, Any]
    path: Path
    output: dict[str, Any]


def cms_fileset(cms_data: Path) -> dict[str, Any]:
    """coffea's fileset of the CMS files, one dataset each."""
    return {name: {"files": {str(cms_data / file): "Events"}} for name, file in DATASETS.items()}


def dask_runner(client: Client) -> processor.Runner:
    """coffea's Runner on ``client``, NanoAOD chunks of :data:`CHUNKSIZE` events."""
    return processor.Runner(
        executor=processor.DaskExecutor(client=client, status=False),
        schema=NanoAODSchema,
        chunksize=CHUNKSIZE,
        savemetrics=True,
    )


def measure(
    client: Client, cms_data: Path, output_dir: Path, name: str = "coffea-processing"
) -> Measured:
    """Run :class:`MeasuredProcessor` inside a collector named ``name``, save the measurement."""
    runner = dask_runner(client)
    with warnings.catch_warnings():
        # NanoAODSchema's complaints about the CMS files are not ours.
        warnings.simplefilter("ignore", RuntimeWarning)
        with MetricsCollector(client, live=False, name=name) as collector:
            output, report = runner(cms_fileset(cms_data), MeasuredProcessor(), treename="Events")
            collector.set_coffea_report(report)
    path = collector.save_measurement(output_dir, "measured")
    return Measured(collector, collector.get_metrics(), Path(path), output)
