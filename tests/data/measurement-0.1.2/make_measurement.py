"""Write a measurement with roastcoffea 0.1.2 (run with 0.1.2's own Python; see README.md)."""

import sys
import time

import awkward as ak
from coffea import processor
from coffea.nanoevents import NanoAODSchema
from coffea.processor import DaskExecutor, Runner
from dask.distributed import Client, LocalCluster

from roastcoffea import MetricsCollector, track_metrics, track_time


class Jets(processor.ProcessorABC):
    @track_metrics
    def process(self, events):
        with track_time(self, "jets"):
            n = int(ak.sum(ak.num(events.Jet.pt)))
        time.sleep(0.3)
        return {"jets": n, "events": len(events)}

    def postprocess(self, accumulator):
        return accumulator


if __name__ == "__main__":
    NanoAODSchema.warn_missing_crossrefs = False
    path, output_dir = sys.argv[1], sys.argv[2]
    fileset = {"ttbar": {"files": {path: "Events"}}}
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None)
    with cluster, Client(cluster) as client:
        collector = MetricsCollector(client, track_workers=True, worker_tracking_interval=0.2)
        with collector:
            runner = Runner(
                executor=DaskExecutor(client=client),
                savemetrics=True,
                chunksize=50,
                schema=NanoAODSchema,
            )
            output, report = runner(fileset, processor_instance=Jets(), treename="Events")
            collector.extract_metrics_from_output(output)
            collector.set_coffea_report(report)
    print(collector.save_measurement(output_dir=output_dir))
