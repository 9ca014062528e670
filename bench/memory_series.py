"""Memory of the per-worker time series: bytes per sample, the cap, and exact peaks.

What it measures, through the same path the scheduler's sampler uses
(`roastcoffea._native.Aggregator.sample(address, now, values)` with the 18 columns of
series.h):

  (a) bytes per worker-sample at full resolution: W workers x N samples into a store
      whose cap is far away, reading `counters["series_bytes"]` (checked: no fold yet).
      The layout cost is the slope between two moments when every worker's raw block
      is exactly full (the tick before a growth), so growth slack cancels out; the
      bytes held per sample (fixed overhead and unused capacity of the geometrically
      grown blocks included) are reported too. Target: <= 64 bytes (the layout).
  (b) one simulated day: 1,000 workers x 86,400 samples (1 s sampling) with a realistic
      value stream (memory as a random walk with rare one-sample spikes, CPU, task
      counts, I/O rates), against the default 64 MiB cap. After every simulated tick it
      checks `series_bytes <= series_cap_bytes`; at the end it checks that decimation
      kept every worker's peak (and minimum) memory exactly, compared with the extreme
      values fed rounded to float32, and that no sample went uncounted. Reported: peak
      bytes held, the cap, the folds, the wall time, and the checks.

`--quick` runs (b) with 100 workers x 8,640 samples and a 2 MiB cap, so that it folds.
Nothing is asserted; the script prints figures and the outcome of each check.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from common import machine, table, verdict

from roastcoffea import _native

NCOLS = 18
EPOCH = 1.7e9
GIB = 1 << 30


def address(i: int) -> str:
    return f"tcp://10.1.{i // 250}.{i % 250 + 1}:40000"


class Stream:
    """Realistic sampler values for W workers, one tick at a time (numpy, vectorized).

    Memory is a random walk between 200 MB and the 8 GB limit with rare spikes of
    1-3 GB lasting one sample; the other columns follow the memory load loosely.
    """

    def __init__(self, workers: int, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.workers = workers
        self.limit = np.full(workers, 8e9)
        self.memory = self.rng.uniform(5e8, 2e9, workers)

    def tick(self, now: float) -> tuple[np.ndarray, list[list[float]]]:
        """Returns (memory column, rows of the 18 columns in series.h order)."""
        rng, w = self.rng, self.workers
        self.memory = np.clip(self.memory + rng.normal(0, 2e7, w), 2e8, self.limit)
        memory = self.memory.copy()
        spikes = rng.random(w) < 2e-4
        memory[spikes] = np.minimum(memory[spikes] + rng.uniform(1e9, 3e9, spikes.sum()), 9.5e9)
        load = memory / self.limit
        processing = rng.poisson(4 * load + 1, w).astype(float)
        executing = np.minimum(processing, 2.0)
        columns = np.stack(
            [
                memory,
                self.limit,
                np.full(w, 2.0),
                processing,
                executing,
                memory * 0.6,
                processing * rng.uniform(0.05, 0.5, w),
                np.clip(rng.normal(150 * load + 20, 15, w), 0, 200),
                np.where(load > 0.7, memory * 0.1, 0.0),
                rng.exponential(2e6, w),
                rng.exponential(2e6, w),
                rng.exponential(5e5, w),
                rng.exponential(5e5, w),
                np.full(w, 64.0),
                rng.poisson(40 * load + 1, w).astype(float),
                np.clip(rng.normal(40 * load, 4, w), 0, None),
                np.clip(rng.exponential(0.5, w), 0, 100),
                now - rng.uniform(0, 1.0, w),
            ],
            axis=1,
        )
        return memory, columns.tolist()


def bytes_per_sample(workers: int, samples: int) -> dict[str, float]:
    """Part (a): full-resolution bytes per worker-sample.

    The raw sample block of a worker grows geometrically, so the bytes held per sample
    depend on where the run stops in the growth cycle. The layout cost is the slope
    between two moments the blocks are exactly full (the tick before a growth): there,
    capacity and samples grew by the same amount.
    """
    agg = _native.Aggregator(series_cap_bytes=4 * GIB, started=EPOCH)
    addresses = [address(i) for i in range(workers)]
    for i, addr in enumerate(addresses):
        agg.worker_seen(addr, f"worker-{i}", EPOCH)
    empty = agg.counters["series_bytes"]
    stream = Stream(workers, seed=7)
    held = []
    for n in range(samples):
        now = EPOCH + 1 + n
        _, rows = stream.tick(now)
        for addr, row in zip(addresses, rows, strict=True):
            agg.sample(addr, now, tuple(row))
        held.append(agg.counters["series_bytes"])
    counters = agg.counters
    full = [k - 1 for k in range(1, samples) if held[k] > held[k - 1]]
    first, last = full[-2], full[-1]
    per_tick = [held[k] / (workers * (k + 1)) for k in range(samples // 10, samples)]
    return {
        "samples": counters["series_samples"],
        "fed": workers * samples,
        "folds": counters["series_folds"],
        "empty": empty,
        "bytes": held[-1],
        "layout": (held[last] - held[first]) / (workers * (last - first)),
        "held_end": held[-1] / (workers * samples),
        "held_mean": sum(per_tick) / len(per_tick),
        "held_max": max(per_tick),
        "held_min": min(per_tick),
    }


def one_day(workers: int, samples: int, cap: int) -> dict[str, object]:
    """Part (b): the simulated day, checking the cap after every tick and the peaks at the end."""
    agg = _native.Aggregator(series_cap_bytes=cap, started=EPOCH)
    addresses = [address(i) for i in range(workers)]
    for i, addr in enumerate(addresses):
        agg.worker_seen(addr, f"worker-{i}", EPOCH)
    stream = Stream(workers, seed=11)
    peak = np.full(workers, -np.inf)
    low = np.full(workers, np.inf)
    total = np.zeros(workers)
    held_max = over_cap = 0
    feed_s = 0.0
    t_start = time.perf_counter()
    for n in range(samples):
        now = EPOCH + 1 + n
        memory, rows = stream.tick(now)
        np.maximum(peak, memory, out=peak)
        np.minimum(low, memory, out=low)
        total += memory
        t0 = time.perf_counter()
        for addr, row in zip(addresses, rows, strict=True):
            agg.sample(addr, now, tuple(row))
        feed_s += time.perf_counter() - t0
        counters = agg.counters
        held_max = max(held_max, counters["series_bytes"])
        over_cap += counters["series_bytes"] > counters["series_cap_bytes"]
    wall = time.perf_counter() - t_start
    counters = agg.counters

    t0 = time.perf_counter()
    series = agg.to_dict()["series"]
    read_s = time.perf_counter() - t0
    peaks_exact = lows_exact = counts_exact = 0
    mean_err = points = 0.0
    for i, addr in enumerate(addresses):
        s = series[addr]
        mem = s["columns"]["memory"]
        points += len(s["count"])
        peaks_exact += max(mem["max"]) == float(np.float32(peak[i]))
        lows_exact += min(mem["min"]) == float(np.float32(low[i]))
        counts_exact += sum(s["count"]) == samples
        mean = sum(m * c for m, c in zip(mem["mean"], s["count"], strict=True)) / sum(s["count"])
        mean_err = max(mean_err, abs(mean - total[i] / samples) / (total[i] / samples))
    return {
        "workers": workers,
        "samples": samples,
        "cap": counters["series_cap_bytes"],
        "held_max": held_max,
        "held_end": counters["series_bytes"],
        "over_cap": over_cap,
        "folds": counters["series_folds"],
        "appended": counters["series_samples"],
        "points": points,
        "peaks_exact": peaks_exact,
        "lows_exact": lows_exact,
        "counts_exact": counts_exact,
        "mean_err": mean_err,
        "wall": wall,
        "feed_s": feed_s,
        "read_s": read_s,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="(b) with 100 x 8,640, 2 MiB cap")
    parser.add_argument("--workers", type=int, default=None, help="(b) workers (1,000)")
    parser.add_argument("--samples", type=int, default=None, help="(b) samples/worker (86,400)")
    parser.add_argument("--cap-mib", type=float, default=None, help="(b) cap in MiB (64)")
    args = parser.parse_args(argv)
    workers = args.workers or (100 if args.quick else 1000)
    samples = args.samples or (8640 if args.quick else 86_400)
    cap = int((args.cap_mib or (2 if args.quick else 64)) * (1 << 20))

    print("memory_series")
    print(f"  {machine()}")
    print()
    a = bytes_per_sample(workers=100, samples=2000)
    rows = [
        ["layout (slope between full blocks)", f"{a['layout']:.2f}", "<= 64"],
        ["held / samples, at the end", f"{a['held_end']:.2f}"],
        ["held / samples, mean over the run", f"{a['held_mean']:.2f}"],
        ["held / samples, min-max over the run", f"{a['held_min']:.1f}-{a['held_max']:.1f}"],
    ]
    rows[0].append(verdict(a["layout"] <= 64))
    print(
        f"(a) full resolution: 100 workers x 2,000 samples = {a['fed']:,} fed, "
        f"{a['samples']:,} stored, folds={a['folds']}, {a['bytes']:,} bytes held "
        f"({a['empty']:,} before the first sample); 'over the run' skips the first 10%"
    )
    print(table(["bytes per worker-sample", "value", "target", ""], rows))
    print()

    b = one_day(workers, samples, cap)
    fed = workers * samples
    print(
        f"(b) simulated day: {workers:,} workers x {samples:,} samples = {fed:,} samples fed "
        f"(1 s apart), cap {b['cap']:,} bytes"
    )
    rows = [
        ["peak bytes held", f"{b['held_max']:,}"],
        ["bytes held at the end", f"{b['held_end']:,}"],
        ["cap (series_cap_bytes)", f"{b['cap']:,}"],
        ["ticks over the cap", f"{b['over_cap']} of {samples:,}"],
        ["folds", f"{b['folds']:,}"],
        ["samples counted", f"{b['appended']:,} of {fed:,}"],
        ["points kept", f"{b['points']:,.0f} ({b['points'] / workers:,.0f} per worker)"],
        ["peak memory exact", f"{b['peaks_exact']} of {workers} workers"],
        ["minimum memory exact", f"{b['lows_exact']} of {workers} workers"],
        ["sample counts exact", f"{b['counts_exact']} of {workers} workers"],
        ["mean memory, max rel. error", f"{b['mean_err']:.1e}"],
        ["wall time", f"{b['wall']:.1f} s"],
        [
            "  in Aggregator.sample calls",
            f"{b['feed_s']:.1f} s ({b['feed_s'] / fed * 1e9:.0f} ns each)",
        ],
        ["  reading back (to_dict)", f"{b['read_s']:.1f} s"],
    ]
    print(table(["", "value"], rows))
    held_ok = b["over_cap"] == 0 and b["held_max"] <= b["cap"]
    exact = b["peaks_exact"] == workers
    print()
    print(
        f"bounded by the cap at every tick: {verdict(held_ok)}; peaks preserved: {verdict(exact)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
