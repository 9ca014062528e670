"""How the scheduler side scales: workers, tasks and chunks, up to a thousand workers.

What it measures, each as a cost per worker, per task or per chunk so that
linear growth reads as a constant:

- **workers** (2 to 1,000, simulated): a real ``distributed.Scheduler`` in this
  process with ``RoastPlugin`` started on it and N real ``WorkerState``
  objects in ``scheduler.workers``. Each worker heartbeats at Dask's own
  period for a cluster of N (``distributed.scheduler.heartbeat_interval``:
  0.5 s up to 10 workers, 6 s at 1,000), the beats spread evenly, and each
  beat carries a new payload made by a real ``DigestTracker`` (window as the
  worker plugin sizes it) from a ``digests_total`` of 50 digests that all
  change between beats (a cluster busy with processor tasks: Dask's
  activities for five task prefixes, the phase clock's and the codecs'). The
  sampler ticks (``RoastPlugin.tick``: drain, sample every worker into the
  series, apply the new payloads) of one heartbeat period and more are timed
  with the process's CPU clock; their mean over the default 1 s interval is
  the share of a core the monitoring costs the scheduler. Then the
  scheduler's side of a flush (every worker's full payload applied; the RPC
  round trips are the real-worker figure of exit_flush.py), the snapshot
  of the span (time, size, the client's decode and metrics), and one
  Prometheus scrape of the plugin's series (collected and formatted as
  Dask's ``/metrics`` does).
- **tasks** (10^4 to 10^6): transitions of a realistic graph (scheduler_hook.py's
  generator) through the plugin's C hook, then a snapshot: hook CPU per task,
  snapshot size (rows are per worker, span and prefix: it does not grow with
  tasks).
- **chunks** (10^2 to 10^5): chunk records of the demo's size added in a
  collected run's span as workers send them, a collector's stream taking them
  every :data:`STREAM_EVERY` records (``Aggregator.stream_records``, what the
  records handler calls), then the exit's snapshot of the rest and the
  client's decoding of all: time and bytes per chunk, the most the store held.

Targets at 1,000 workers: scheduler CPU for ingesting all payloads
<= 1 % of one core at the default interval; snapshot of one span <= 10 MB;
collector exit (flush + snapshot + decode) <= 1 s. Nothing is asserted.

Run: ``.venv/bin/python bench/scale_scheduler.py`` (about a minute).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import time
from collections.abc import Callable
from typing import Any

from common import machine, median, table, verdict
from distributed import Scheduler
from distributed.core import Status
from distributed.scheduler import WorkerState, heartbeat_interval
from prometheus_client import CollectorRegistry, generate_latest
from scheduler_hook import WORKERS, make_round

from roastcoffea import _native
from roastcoffea.metrics import MetricsInputs, compute_metrics
from roastcoffea.plugin import RoastPlugin
from roastcoffea.plugin.protocol import SNAPSHOT_HANDLER
from roastcoffea.plugin.worker.plugin import auto_window
from roastcoffea.records import decode_records, encode_record

SPAN = "5dc9b908-116b-49a5-b0d7-5a681f49a111"
PREFIXES = ("processor-4f2a9c", "from-uproot", "reduce", "finalize", "getitem")
DASK_ACTIVITIES = ("thread-cpu", "thread-noncpu", "executor", "other")
PHASES = ("open", "read", "decompress", "interpret", "user", "output", "other")
INTERVAL = 1.0  # the default sampler interval, seconds
#: Chunk records between two calls of a collector's stream: a cluster finishing a
#: thousand chunks in the stream's default interval of 1 s.
STREAM_EVERY = 1_000


def busy_digests(step: int, out: dict[tuple, float]) -> None:
    """A worker's ``digests_total`` after ``step`` heartbeats of processor work.

    Updated in place, as Dask's ``Worker.digests_total``: the tracker knows a
    digest by its key object.
    """
    t = float(step + 1)
    for i, prefix in enumerate(PREFIXES):
        for j, activity in enumerate(DASK_ACTIVITIES):
            out[("execute", SPAN, prefix, activity, "seconds")] = t * (i + 1) * (j + 1) * 0.01
    processor = PREFIXES[0]
    for k, phase in enumerate(PHASES):
        out[("execute", SPAN, processor, f"phase:{phase}", "wall-seconds")] = t * 0.1 * (k + 1)
        out[("execute", SPAN, processor, f"phase:{phase}", "cpu-seconds")] = t * 0.05 * (k + 1)
    out[("execute", SPAN, processor, "phase:read", "bytes")] = t * 8e6
    out[("execute", SPAN, processor, "phase:decompress", "bytes")] = t * 2e7
    out[("execute", SPAN, processor, "phase-tasks", "count")] = t
    for unit in ("wall-seconds", "cpu-seconds", "bytes", "compressed-bytes"):
        out[("execute", SPAN, processor, "decompress:ZLIB", unit)] = t * 1.5
    for activity in ("network", "decompress", "deserialize", "other"):
        out[("gather-dep", activity, "seconds")] = t * 0.002
    out[("get-data", "serialize", "seconds")] = t * 0.001


class ExportOnly:
    """A registry collector serving one plugin's Prometheus export."""

    def __init__(self, export: Any) -> None:
        self.export = export

    def collect(self) -> Any:
        return self.export.families()


def worker_state(i: int, scheduler: Scheduler) -> WorkerState:
    return WorkerState(
        scheduler=scheduler,
        address=f"tcp://10.{i // 250}.{i % 250}.1:8786",
        status=Status.running,
        pid=1000 + i,
        name=f"worker-{i}",
        nthreads=4,
        memory_limit=8 << 30,
        local_directory="/tmp",
        nanny=None,
        server_id=f"Worker-{i:06d}",
    )


def cpu_of(work: Callable[[], Any]) -> tuple[float, Any]:
    """(process CPU seconds of ``work()``, its result)."""
    start = time.process_time()
    result = work()
    return time.process_time() - start, result


def beats(n: int, period: float, t0: float, t1: float) -> list[int]:
    """The workers (of ``n``, beats spread evenly over ``period``) that beat in (t0, t1]."""
    return [
        i
        for i in range(n)
        if int((t1 - i * period / n) // period) > int((t0 - i * period / n) // period)
    ]


async def worker_scale(n: int, periods: int) -> dict[str, float]:
    """Tick, flush and snapshot costs at ``n`` simulated workers."""
    async with Scheduler(dashboard_address=":0", validate=False) as scheduler:
        plugin = RoastPlugin(interval=INTERVAL, live=False)
        scheduler.add_plugin(plugin)
        await plugin.start(scheduler)
        period = heartbeat_interval(n)
        window = auto_window(INTERVAL, period * 1000)
        states = [worker_state(i, scheduler) for i in range(n)]
        trackers = [_native.DigestTracker(ws.server_id, window) for ws in states]
        digests: dict[tuple, float] = {}
        for step, (ws, tracker) in enumerate(zip(states, trackers, strict=True)):
            busy_digests(step, digests)
            ws.metrics = {"memory": 2 << 30, "cpu": 95.0, "roastcoffea": tracker.payload(digests)}
            scheduler.workers[ws.address] = ws
        plugin.tick()  # the first tick also registers every worker
        ticks = max(2, round(periods * period / INTERVAL))
        tick_cpu, payload_bytes = [], []
        for tick in range(1, ticks + 1):
            for i in beats(n, period, (tick - 1) * INTERVAL, tick * INTERVAL):
                busy_digests(n + tick, digests)
                payload = trackers[i].payload(digests)
                payload_bytes.append(len(payload))
                states[i].metrics = {"memory": 2 << 30, "cpu": 95.0, "roastcoffea": payload}
            cpu, _ = cpu_of(plugin.tick)
            tick_cpu.append(cpu)
        busy_digests(n + ticks + 1, digests)
        full = [tracker.full_payload(digests) for tracker in trackers]
        agg = plugin.aggregator
        now = time.time()
        flush_cpu, _ = cpu_of(
            lambda: [agg.ingest(ws.address, p, now) for ws, p in zip(states, full, strict=True)]
        )
        start = time.perf_counter()
        data = plugin.handlers[SNAPSHOT_HANDLER](span_id=SPAN)
        snapshot_s = time.perf_counter() - start
        start = time.perf_counter()
        snap = _native.decode_snapshot(data)
        decode_s = time.perf_counter() - start
        inputs = MetricsInputs(
            snapshot=snap,
            t_start=snap["started"],
            t_end=snap["taken_at"],
            wall_time=snap["taken_at"] - snap["started"],
            coffea_report={"entries": n * 10**6, "bytesread": n * 10**9, "processtime": 1.0},
            detected_prefixes={PREFIXES[0]},
        )
        start = time.perf_counter()
        metrics = compute_metrics(inputs)
        metrics_s = time.perf_counter() - start
        assert len(metrics["per_worker"]) == n
        registry = CollectorRegistry()
        registry.register(ExportOnly(plugin.export))
        start = time.perf_counter()
        scrape = generate_latest(registry)
        scrape_s = time.perf_counter() - start
        for ws in states:
            del scheduler.workers[ws.address]
        assert len(snap["workers"]) == n
        return {
            "period": period,
            "window": window,
            "payload_bytes": median(payload_bytes),
            "tick_cpu": sum(tick_cpu) / len(tick_cpu),
            "flush_cpu": flush_cpu,
            "snapshot_s": snapshot_s,
            "snapshot_bytes": len(data),
            "decode_s": decode_s,
            "metrics_s": metrics_s,
            "scrape_s": scrape_s,
            "scrape_bytes": len(scrape),
        }


def task_scale(n_tasks: int) -> dict[str, float]:
    """Hook CPU per task and snapshot size after ``n_tasks`` tasks' transitions."""
    rng = random.Random(n_tasks)
    chunks, tasks, groups, calls = make_round(n_tasks, rng, 1.7e9)
    agg = _native.Aggregator(started=1.7e9)
    agg.set_span_lookup(tasks, groups)
    for address in WORKERS:
        agg.worker_seen(address, address, 1.7e9)
    hook = agg.transition

    def drive() -> None:
        for events in chunks:
            for key, start, finish, stimulus_id, kwargs in events:
                hook(key, start, finish, stimulus_id=stimulus_id, **kwargs)
        agg.drain()

    cpu, _ = cpu_of(drive)
    data = agg.snapshot()
    return {"hook_cpu": cpu, "calls": calls, "snapshot_bytes": len(data)}


def chunk_fields(i: int, start: float) -> dict[str, Any]:
    """A chunk record of the demo's shape (the keys and sizes the decorator writes)."""
    return {
        "kind": "chunk",
        "v": 1,
        "task_key": f"processor-4f2a9c-{i:08x}",
        "prefix": "processor-4f2a9c",
        "worker": WORKERS[i % len(WORKERS)],
        "span": SPAN,
        "dataset": ("dijet", "dimuon", "z_window")[i % 3],
        "file": f"/data/nano_{i % 40:03d}.root",
        "treename": "Events",
        "entry_start": (i // 40) * 100_000,
        "entry_stop": (i // 40 + 1) * 100_000,
        "uuid": f"6f1c8b3e-3c55-11ee-be56-{i % 40:012x}",
        "num_events": 100_000,
        "t_start": start,
        "t_end": start + 1.2 + (i % 13) * 0.01,
        "duration": 1.2 + (i % 13) * 0.01,
        "process_cpu_seconds": 1.1,
        "task_start": start - 0.1,
        "task_end": start + 1.35,
        "task_duration": 1.45,
        "mem_before_mib": 812.5,
        "mem_after_mib": 830.1,
        "mem_delta_mib": 17.6,
        "bytes_read": 8_500_000,
        "bytes_read_task": 8_560_000,
        "instrument_bytes": 4_000,
        "accessed_branches": [f"Branch_{b}" for b in range(24)],
        "num_branches_accessed": 24,
        "accessed_bytes": 8_400_000 + i % 1000,
        "accessed_uncompressed_bytes": 18_000_000 + i % 1000,
        "unavailable": {},
    }


def chunk_scale(n_chunks: int) -> dict[str, float]:
    """Stream, snapshot and decode costs of a run that sent ``n_chunks`` chunk records.

    The store (64 MiB by default) holds the run's records only between two calls
    of its stream, so it drops none however many the run sends.
    """
    records = [encode_record(chunk_fields(i, 1.7e9 + i)) for i in range(n_chunks)]
    agg = _native.Aggregator(started=1.7e9)
    taken: list[dict[str, Any]] = []
    acked, peak = 0, 0

    def send() -> None:
        nonlocal acked, peak
        for i, record in enumerate(records):
            agg.add_record(WORKERS[i % 8], record, 1.7e9 + i, SPAN, True)
            if (i + 1) % STREAM_EVERY == 0:
                peak = max(peak, agg.record_bytes)
                batch, acked = agg.stream_records([SPAN], acked)
                taken.extend(batch)

    cpu, _ = cpu_of(send)
    peak = max(peak, agg.record_bytes)
    start = time.perf_counter()
    agg.ack_records([SPAN], acked)
    data = agg.snapshot(spans=[SPAN])
    snapshot_s = time.perf_counter() - start
    start = time.perf_counter()
    decoded = decode_records([*taken, *_native.decode_snapshot(data)["records"]])
    decode_s = time.perf_counter() - start
    return {
        "add_cpu": cpu,
        "received": len(decoded),
        "streamed": len(taken),
        "dropped": agg.counters["records_dropped"],
        "peak_bytes": peak,
        "snapshot_s": snapshot_s,
        "snapshot_bytes": len(data),
        "decode_s": decode_s,
    }


def section(title: str, headers: list[str], rows: list[list[str]]) -> None:
    print(title)
    print(table(headers, rows))
    print()


def task_row(n: int, r: dict[str, float]) -> list[str]:
    return [
        f"{n:,}",
        f"{r['calls']:,}",
        f"{r['hook_cpu']:.2f}",
        f"{r['hook_cpu'] / n * 1e6:.2f}",
        f"{r['hook_cpu'] / r['calls'] * 1e9:.0f}",
        f"{r['snapshot_bytes'] / 1e3:.1f}",
    ]


def chunk_row(n: int, r: dict[str, float]) -> list[str]:
    return [
        f"{n:,}",
        f"{r['received']:,}",
        f"{r['streamed']:,}",
        f"{r['dropped']:,}",
        f"{r['peak_bytes'] / 2**20:.2f}",
        f"{r['add_cpu'] / n * 1e6:.2f}",
        f"{r['snapshot_bytes'] / 1e6:.2f}",
        f"{r['snapshot_s'] * 1e3:.1f}",
        f"{r['decode_s'] * 1e3:.0f}",
        f"{r['decode_s'] / n * 1e6:.1f}",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 10, 100, 1000])
    parser.add_argument("--tasks", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--chunks", type=int, nargs="+", default=[100, 1_000, 10_000, 100_000])
    parser.add_argument(
        "--periods", type=int, default=3, help="heartbeat periods of sampler ticks timed"
    )
    parser.add_argument("--quick", action="store_true", help="the smallest sizes only")
    args = parser.parse_args(argv)
    if args.quick:
        args.workers, args.tasks, args.chunks = [2, 100], [10_000], [1_000]
    logging.getLogger("distributed").setLevel(logging.ERROR)
    print(machine())
    print()

    rows, last = [], None
    for n in args.workers:
        r = asyncio.run(worker_scale(n, args.periods))
        exit_s = r["flush_cpu"] + r["snapshot_s"] + r["decode_s"] + r["metrics_s"]
        rows.append(
            [
                f"{n:,}",
                f"{r['period']:g}",
                f"{r['payload_bytes'] / 1e3:.1f}",
                f"{r['tick_cpu'] * 1e3:.2f}",
                f"{r['tick_cpu'] / n * 1e6:.1f}",
                f"{100 * r['tick_cpu'] / INTERVAL:.3f}",
                f"{r['flush_cpu'] * 1e3:.1f}",
                f"{r['snapshot_bytes'] / 1e6:.2f}",
                f"{r['snapshot_bytes'] / n / 1e3:.2f}",
                f"{r['snapshot_s'] * 1e3:.1f}",
                f"{r['decode_s'] * 1e3:.1f}",
                f"{r['metrics_s'] * 1e3:.0f}",
                f"{exit_s * 1e3:.0f}",
                f"{r['scrape_s'] * 1e3:.0f}",
                f"{r['scrape_bytes'] / 1e3:.0f}",
            ]
        )
        last = (n, r, exit_s)
    print("workers (simulated: real Scheduler, WorkerStates and payloads at Dask's heartbeat rate)")
    print(
        table(
            [
                "workers",
                "beat s",
                "payload kB",
                "tick CPU ms",
                "us/worker",
                "% of a core @1s",
                "flush ingest ms",
                "snapshot MB",
                "kB/worker",
                "snapshot ms",
                "decode ms",
                "metrics ms",
                "exit ms",
                "scrape ms",
                "scrape kB",
            ],
            rows,
        )
    )
    if last is not None:
        n, r, exit_s = last
        share = 100 * r["tick_cpu"] / INTERVAL
        print(
            f"at {n:,} workers: scheduler CPU {share:.2f} % of a core (target <= 1 %) "
            f"{verdict(share <= 1.0)}; snapshot {r['snapshot_bytes'] / 1e6:.2f} MB "
            f"(target <= 10 MB) {verdict(r['snapshot_bytes'] <= 10e6)}; collector exit without "
            f"the flush's RPC round trips {exit_s:.2f} s (target <= 1 s) {verdict(exit_s <= 1.0)}"
        )
    print()

    section(
        "tasks (transitions through the C hook, 8 workers, 3 spans)",
        ["tasks", "hook calls", "hook CPU s", "us/task", "ns/call", "snapshot kB"],
        [task_row(n, task_scale(n)) for n in args.tasks],
    )
    section(
        f"chunks (records of one run: streamed every {STREAM_EVERY:,}, the rest in the exit's "
        "snapshot, all decoded by the client)",
        [
            "chunks sent",
            "received",
            "streamed",
            "dropped at the cap",
            "store peak MiB",
            "add+stream us/chunk",
            "exit snapshot MB",
            "exit snapshot ms",
            "decode ms",
            "decode us/chunk",
        ],
        [chunk_row(n, chunk_scale(n)) for n in args.chunks],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
