"""The work ``@track_metrics`` adds to one chunk, timed directly in one process.

What it measures: for real chunks of the demo's synthetic NanoAOD (100,000 events, or
``--chunksize``), the time
the chunk instrumentation itself takes, against the time of the processor's ``process``
on the same chunk. The instrumentation is what ``@track_metrics`` runs around
``process``: ``Measure(events)`` before (events, metadata, RSS, the file's byte counter,
the start of the access log) and ``finish()`` after (RSS, bytes, the branches read and
their basket arithmetic, the TKey headers of those baskets read from the file, the
chunk record). ``process`` is the demo's undecorated method, so its sections do nothing.

How: each chunk is opened as coffea's executor opens it (``uproot.open``, then
``NanoEventsFactory.from_root`` in virtual mode with an access log and the same metadata),
then timed as instrumentation start, ``process``, instrumentation
finish with ``time.perf_counter``. Outside a Dask worker the finished record goes to the
local queue instead of the worker plugin; that hand-off is a list append either way.
The figures are medians over chunks and repeats; nothing is asserted.
"""

from __future__ import annotations

import time

import uproot
from common import parse_chunk_bench, spread_table
from workload import chunk_events

from roastcoffea.demo.analysis import DemoProcessor
from roastcoffea.instrument._measure import Measure
from roastcoffea.records import drain_local_records


def main(argv: list[str] | None = None) -> int:
    args, directory, ranges = parse_chunk_bench(__doc__, 10, argv)
    process = DemoProcessor.process.__wrapped__  # type: ignore[attr-defined]
    processor = DemoProcessor()

    own_ms: list[float] = []
    process_ms: list[float] = []
    records: list[dict] = []
    for _ in range(args.repeats):
        for path, start, stop in ranges:
            with uproot.open({str(path): None}) as file:
                events = chunk_events(file, str(path), start, stop)
                t0 = time.perf_counter()
                measure = Measure(events)
                t1 = time.perf_counter()
                process(processor, events)
                t2 = time.perf_counter()
                measure.finish(None)
                t3 = time.perf_counter()
            own_ms.append(1e3 * ((t1 - t0) + (t3 - t2)))
            process_ms.append(1e3 * (t2 - t1))
        records += drain_local_records()
    read = [r["num_branches_accessed"] for r in records]
    complete = sum(r["accessed_uncompressed_bytes"] is not None for r in records)

    share = [own / proc for own, proc in zip(own_ms, process_ms, strict=True)]
    print(
        f"instrument cost: {len(ranges)} chunks of {args.chunksize:,} events x "
        f"{args.repeats} repeats, demo NanoAOD in {directory}"
    )
    print(
        f"branches read per chunk: {min(read)} to {max(read)}; "
        f"{complete} of {len(records)} records with every byte figure"
    )
    print()
    rows = [
        ("instrumentation ms", own_ms, 2),
        ("process() ms", process_ms, 1),
        ("instrumentation / process()", share, 4),
    ]
    print(spread_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
