"""The sampler's per-worker time series against the scheduler's own worker state."""

from __future__ import annotations

import math
from typing import Any

from distributed.metrics import time

from roastcoffea import RoastPlugin
from roastcoffea.demo.tasks import nap
from roastcoffea.plugin import snapshot

INTERVAL = 0.2


def tick_and_read(dask_scheduler: Any) -> list[tuple[str, float, float, float]]:
    """Sample now, then read (address, ws memory, our last memory, our last time) atomically."""
    plugin = dask_scheduler.plugins["roastcoffea"]
    plugin.tick()
    series = plugin.aggregator.to_dict()["series"]
    return [
        (
            address,
            ws.metrics["memory"],
            series[address]["columns"]["memory"]["mean"][-1],
            series[address]["t_first"][-1],
        )
        for address, ws in dask_scheduler.workers.items()
    ]


def test_every_tick_samples_every_worker(make_cluster: Any) -> None:
    # How often the periodic callback runs depends on the machine's load; what the
    # sampler guarantees is that each tick samples every worker at the same instant.
    _, client = make_cluster()
    client.register_plugin(RoastPlugin(interval=INTERVAL))
    t0 = time()  # the scheduler runs in this process: same clock
    client.gather(client.map(nap, [0.25] * 16, range(16), pure=False))
    t1 = time()
    assert t1 - t0 >= 1.5
    snap = snapshot(client, t_from=t0, t_to=t1)
    info = client.scheduler_info()["workers"]
    assert len(info) == 2
    ticks = {}
    for address, worker in info.items():
        series = snap["series"][address]
        assert set(series["count"]) == {1}, "decimated although far below the cap"
        ticks[address] = [t for t in series["t_first"] if t0 <= t <= t1]
        assert ticks[address], f"{address}: no sample in {t1 - t0:.1f} s"
        columns = series["columns"]
        assert columns["nthreads"]["mean"][-1] == worker["nthreads"] == 1
        assert columns["memory_limit"]["mean"][-1] == worker["memory_limit"]
        assert columns["memory"]["max"][-1] > 10 * 2**20
    first, second = ticks.values()
    assert first == second

    now = time()
    for address, dask_memory, our_memory, sampled_at in client.run_on_scheduler(tick_and_read):
        assert math.isclose(our_memory, dask_memory, rel_tol=1e-6), address
        assert now <= sampled_at + 0.002  # the sample just taken (1 ms clock)
