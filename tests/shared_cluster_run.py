"""One analyst's run on a shared cluster, as its own client process.

``python shared_cluster_run.py ADDRESS CLASS DATASETS BARRIER OUT`` connects to the
scheduler at ADDRESS, waits until every client named in the BARRIER directory is
ready, then runs coffea's Runner inside a MetricsCollector over the CMS files named
in DATASETS (``name=file+file,name=file``, files of ``tests/data``) with a processor
class called CLASS. It writes its coffea report, its metrics and its chunk records to
OUT as JSON. Two of these started together are two notebooks of one analyst.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import awkward as ak
from coffea import processor
from coffea.nanoevents import NanoAODSchema
from distributed import Client

from roastcoffea import MetricsCollector, track_metrics

DATA = Path(__file__).resolve().parent / "data"
CHUNKSIZE = 10
#: Seconds each chunk sleeps, so that the two runs' chunks overlap in time.
NAP = 0.05


def processor_class(name: str) -> type:
    """A processor class called ``name``, defined in ``__main__`` (shipped by value)."""

    @track_metrics
    def process(self: Any, events: Any) -> dict[str, Any]:
        time.sleep(NAP)
        dataset = events.metadata["dataset"]
        return {
            "events": {dataset: len(events)},
            "muons": {dataset: int(ak.sum(ak.num(events.Muon.pt)))},
        }

    def postprocess(self: Any, accumulator: Any) -> Any:
        return accumulator

    namespace = {"process": process, "postprocess": postprocess, "__module__": "__main__"}
    return type(name, (processor.ProcessorABC,), namespace)


def dask_span_counts(dask_scheduler: Any, span_id: str) -> dict[str, float]:
    """Dask's own count activities of a span, per prefix (its ``cumulative_worker_metrics``)."""
    span = dask_scheduler.extensions["spans"].spans[span_id]
    return {
        f"{key[1]}:{key[2]}": value
        for key, value in span.cumulative_worker_metrics.items()
        if key[0] == "execute" and key[-1] == "count"
    }


def fileset(spec: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in spec.split(","):
        name, files = part.split("=")
        out[name] = {"files": {str(DATA / f): "Events" for f in files.split("+")}}
    return out


def wait_at(barrier: Path, me: str, parties: int) -> None:
    (barrier / me).touch()
    deadline = time.monotonic() + 120
    while len(list(barrier.iterdir())) < parties:
        if time.monotonic() > deadline:
            raise TimeoutError("the other client never arrived")
        time.sleep(0.01)


def main(address: str, name: str, spec: str, barrier: str, out: str) -> None:
    NanoAODSchema.warn_missing_crossrefs = False
    proc = processor_class(name)()
    with Client(address) as client:
        runner = processor.Runner(
            executor=processor.DaskExecutor(client=client, status=False),
            schema=NanoAODSchema,
            chunksize=CHUNKSIZE,
            savemetrics=True,
        )
        wait_at(Path(barrier), Path(out).name, 2)
        with MetricsCollector(client, live=False) as mc:
            output, report = runner(fileset(spec), processor_instance=proc, treename="Events")
            mc.set_coffea_report(report)
        metrics = mc.get_metrics()
        # Dask's span totals take the workers' digests at their next heartbeats.
        prefixes = metrics.get("processor_prefixes") or ["?"]
        wanted = f"{prefixes[0]}:phase-tasks"
        deadline = time.monotonic() + 60
        while True:
            dask_counts = client.run_on_scheduler(dask_span_counts, span_id=mc.span_id)
            if dask_counts.get(wanted) == metrics["phase_tasks"] or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    keep = (
        "num_chunks",
        "total_events",
        "per_dataset",
        "phase_tasks",
        "per_prefix",
        "processor_prefixes",
        "processor_task_time_seconds",
        "records_lost",
    )
    result = {
        "report": {k: report[k] for k in ("chunks", "entries", "bytesread")},
        "output": output["events"],
        "metrics": {k: metrics.get(k) for k in keep},
        "chunks": [
            {
                k: c.get(k)
                for k in ("dataset", "entry_start", "num_events", "task_duration", "duration")
            }
            for c in mc.chunk_metrics
        ],
        "dask_span_counts": dask_counts,
        "collector_errors": mc.collector_errors,
        "span_id": mc.span_id,
    }
    Path(out).write_text(json.dumps(result, default=str))


if __name__ == "__main__":
    main(*sys.argv[1:])
