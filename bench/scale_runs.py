"""What a run carries on a long-lived cluster: consecutive collected runs on one plugin.

What it measures: ``--runs`` runs in a row of the ``Analysis`` processor of
``bench/workload.py``, each inside its own ``MetricsCollector`` on the same cluster and the
same registered plugin (as on a facility's cluster that serves many analyses), with small
chunks so that each run leaves many chunk records: 200,000 events in 2 files in chunks of
100 events, 2,000 chunk records per run. For each run, from its own metrics: the chunk records
it collected, its snapshot's size, the collector's exit time, and the records the scheduler
still holds after the exit. If each collector takes and releases its own span's records, the
snapshot size and the exit time stay flat from run to run and the store is empty between runs.
Nothing is asserted; the script prints figures.
"""

from __future__ import annotations

import argparse
from typing import Any

from coffea import processor
from coffea.nanoevents import NanoAODSchema
from common import data_dir, machine, quiet_cluster, table
from workload import TREE, Analysis

from roastcoffea import MetricsCollector, RoastPlugin
from roastcoffea.demo.nanoaod import ensure_files


def held_records(dask_scheduler: Any) -> int:
    """Chunk and phase records the plugin's store holds, of every span."""
    return len(dask_scheduler.plugins["roastcoffea"].aggregator.to_dict()["records"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=4, help="consecutive runs (4)")
    parser.add_argument("--events", type=int, default=200_000, help="events per run")
    parser.add_argument("--chunksize", type=int, default=100, help="events per chunk")
    parser.add_argument("--quick", action="store_true", help="20,000 events, 3 runs")
    args = parser.parse_args(argv)
    if args.quick:
        args.events, args.runs = 20_000, 3
    files = [str(p) for p in ensure_files(data_dir(args.events, 2), args.events, 2)]
    fileset = {"synthetic": {"files": dict.fromkeys(files, TREE)}}
    NanoAODSchema.warn_missing_crossrefs = False
    print(
        f"consecutive runs: {args.runs} runs of {args.events:,} events in chunks of "
        f"{args.chunksize}, one plugin; {machine()}"
    )
    rows = []
    with quiet_cluster() as client:
        client.register_plugin(RoastPlugin())
        for run in range(1, args.runs + 1):
            runner = processor.Runner(
                executor=processor.DaskExecutor(client=client, status=False),
                schema=NanoAODSchema,
                chunksize=args.chunksize,
                savemetrics=True,
            )
            with MetricsCollector(client, live=False) as mc:
                _, report = runner(fileset, processor_instance=Analysis(), treename=TREE)
                mc.set_coffea_report(report)
            monitoring = mc.get_metrics()["monitoring"]
            rows.append(
                [
                    run,
                    len(mc.chunk_metrics),
                    f"{monitoring['snapshot_bytes'] / 1e6:.2f}",
                    f"{monitoring['exit_seconds'] * 1e3:.0f}",
                    client.run_on_scheduler(held_records),
                ]
            )
            print(f"  run {run} done", flush=True)
    print()
    headers = ["run", "chunk records", "snapshot MB", "exit ms", "records held after exit"]
    print(table(headers, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
