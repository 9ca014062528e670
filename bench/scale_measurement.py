"""What a measurement of many chunks costs to compute, save, load, report and plot.

What it measures: for each number of chunks N (10^3 to 10^5), a metrics
dictionary is computed (``compute_metrics``) from N chunk records and N phase
records of the demo's shape (three datasets, 40 files, the fields
``@track_metrics`` and the phase clock write) and a snapshot of two workers
busy with processor tasks; it is then saved (``save_measurement``), loaded
back (``load_measurement``), rendered as the HTML report (``write_report``, as
``roastcoffea report`` does) and drawn (``save_plots``, as ``roastcoffea plot``
does). Each step is timed once with ``time.perf_counter``, and per chunk.

Targets: a 10,000-chunk measurement loads in <= 1 s and reports and
plots in <= 15 s; a 100,000-chunk one does all in seconds, not minutes.
Nothing is asserted.

Run: ``.venv/bin/python bench/scale_measurement.py`` (a few minutes).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from common import machine, table, verdict
from scale_scheduler import SPAN, busy_digests, chunk_fields

from roastcoffea import _native
from roastcoffea.measurement import load_measurement, save_measurement
from roastcoffea.metrics import MetricsInputs, compute_metrics
from roastcoffea.plots.catalog import save_plots
from roastcoffea.report.html import write_report

T0 = 1.7e9
WORKERS = ("tcp://10.0.0.1:8786", "tcp://10.0.0.2:8786")
PHASES = ("open", "read", "decompress", "interpret", "user", "output", "other")
EVENTS = 100_000  # per chunk, as scale_scheduler.chunk_fields writes


def snapshot(seconds: float) -> dict[str, Any]:
    """Two workers busy with processor tasks for ``seconds``: digests and samples."""
    agg = _native.Aggregator(started=T0)
    digests: dict[tuple, float] = {}
    busy_digests(int(seconds), digests)
    for i, address in enumerate(WORKERS):
        agg.worker_seen(address, f"w{i}", T0)
        agg.ingest(address, _native.DigestTracker(f"Worker-{i}").full_payload(digests), T0 + 1)
        for t in range(0, int(seconds) + 1, max(1, int(seconds) // 500)):
            values = (2e9, 8e9, 1, 1, 1, 1e8, 1.0, 95.0, 0, 0, 0, 0, 0, 2, 1, 1.0, 0, T0 + t)
            agg.sample(address, T0 + t, values)
    agg.set_span(SPAN, None, ("coffea-processing",))
    return agg.to_dict()


def chunk(i: int) -> dict[str, Any]:
    """Chunk ``i`` of two workers running one chunk at a time each."""
    record = chunk_fields(i, T0 + 2 + i * 2 / len(WORKERS))
    record["worker"] = WORKERS[i % len(WORKERS)]
    return record


def phase_record(record: dict[str, Any]) -> dict[str, Any]:
    wall = {p: 0.1 + 0.02 * k for k, p in enumerate(PHASES)}
    return {
        "kind": "phases",
        "v": 1,
        "task_key": record["task_key"],
        "prefix": record["prefix"],
        "worker": record["worker"],
        "span": SPAN,
        "dataset": record["dataset"],
        "file": record["file"],
        "entry_start": record["entry_start"],
        "entry_stop": record["entry_stop"],
        "thread": 140_000_000_000,
        "t_start": record["task_start"],
        "elapsed": sum(wall.values()),
        "wall": wall,
        "cpu": {p: 0.8 * s for p, s in wall.items()},
        "read_bytes": 8_400_000,
        "codecs": {"ZLIB": [0.3, 0.29, 8_000_000, 18_000_000]},
    }


def timed(step: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    result = step()
    return time.perf_counter() - start, result


def one_size(n: int, root: Path) -> dict[str, float]:
    chunks = [chunk(i) for i in range(n)]
    phases = [phase_record(c) for c in chunks]
    seconds = chunks[-1]["t_end"] - T0
    inputs = MetricsInputs(
        snapshot=snapshot(seconds),
        t_start=T0,
        t_end=T0 + seconds + 1,
        wall_time=seconds + 1,
        coffea_report={"entries": n * EVENTS, "bytesread": n * 8_560_000, "chunks": n},
        chunks=chunks,
        phases=phases,
        detected_prefixes={"processor-4f2a9c"},
    )
    out: dict[str, float] = {}
    out["compute"], metrics = timed(lambda: compute_metrics(inputs))
    out["save"], path = timed(lambda: save_measurement(metrics, T0, T0 + seconds, root, f"n{n}"))
    out["load"], (loaded, t0, t1) = timed(lambda: load_measurement(path))
    assert len(loaded["raw_chunk_metrics"]) == n
    out["report"], _ = timed(lambda: write_report(path / "report.html", loaded, t0=t0, t1=t1))
    out["plots"], figures = timed(lambda: save_plots(loaded, path / "plots"))
    out["figures"] = len(figures)
    out["bytes"] = sum(f.stat().st_size for f in path.iterdir() if f.is_file())
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--chunks", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--quick", action="store_true", help="1,000 chunks only")
    args = parser.parse_args(argv)
    if args.quick:
        args.chunks = [1_000]
    print(machine())
    print()
    rows, results = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.chunks:
            r = results[n] = one_size(n, Path(tmp))
            rows.append(
                [
                    f"{n:,}",
                    f"{r['bytes'] / 1e6:.1f}",
                    *(f"{r[k]:.2f}" for k in ("compute", "save", "load", "report", "plots")),
                    f"{int(r['figures'])}",
                    *(f"{r[k] / n * 1e3:.3f}" for k in ("load", "report", "plots")),
                ]
            )
    print(
        table(
            [
                "chunks",
                "files MB",
                "compute s",
                "save s",
                "load s",
                "report s",
                "plots s",
                "figures",
                "load ms/chunk",
                "report ms/chunk",
                "plots ms/chunk",
            ],
            rows,
        )
    )
    if 10_000 in results:
        r = results[10_000]
        print(
            f"\nat 10,000 chunks: load {r['load']:.2f} s (target <= 1 s) "
            f"{verdict(r['load'] <= 1)}; "
            f"report + plots {r['report'] + r['plots']:.1f} s (target <= 15 s) "
            f"{verdict(r['report'] + r['plots'] <= 15)}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
