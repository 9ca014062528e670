"""How often does the regression gate cry wolf, and how often does it catch a slow-down?

Runs one coffea analysis of two generated datasets (20 chunks each) many times on one
single-threaded worker, the machine's load changing between runs (0, 1 or 2
CPU-burning processes beside the worker, in a rotating order). Most runs are identical;
every fourth burns extra CPU in ``process()`` for dataset ``b`` only, 30 % of that
dataset's measured cost per event (``--extra``). One worker thread, so that the
datasets' chunks run one after another: on cores that share hardware, one dataset's
extra CPU raises the other's CPU per event too, and that is the machine, not the gate
(docs/guide.md says so). Then it measures the gate
(:func:`roastcoffea.metrics.regression.compare_runs`) on them:

- the false-alarm rate: the share of comparisons of identical runs in which the gate
  marks any dataset slower or faster (one run per side: consecutive identical runs;
  several per side: random draws of distinct identical runs);
- the detection rate: the share of comparisons of identical runs against runs with the
  extra cost in which the gate marks dataset ``b`` slower, and the share in which it
  also marks dataset ``a``, whose code did not change.

Run from the repository's root: ``.venv/bin/python bench/gate_rates.py`` (``--quick``:
fewer runs). Figures in docs/guide.md ("A regression gate in CI").
"""

from __future__ import annotations

import argparse
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import awkward as ak
import cloudpickle
from coffea import processor
from coffea.nanoevents import NanoAODSchema
from common import machine, table

cloudpickle.register_pickle_by_value(sys.modules[__name__])

TREE = "Events"
#: Random draws of the runs of a side, for several runs per side.
DRAWS = 300


class Analysis(processor.ProcessorABC):
    """Jets and muons; burns ``extra_us`` of thread CPU per event of dataset b."""

    def __init__(self, extra_us: float = 0.0) -> None:
        self.extra_us = extra_us

    def process(self, events: Any) -> dict[str, Any]:
        total = float(ak.sum(events.Jet.pt)) + float(ak.sum(events.Muon.pt))
        if events.metadata["dataset"] == "b" and self.extra_us:
            end = time.thread_time() + self.extra_us * 1e-6 * len(events)
            while time.thread_time() < end:
                pass
        return {"sum": total}

    def postprocess(self, accumulator: Any) -> Any:
        return accumulator


def burners(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def run_once(client: Any, fileset: dict, chunksize: int, extra_us: float) -> dict[str, Any]:
    from roastcoffea import MetricsCollector

    runner = processor.Runner(
        executor=processor.DaskExecutor(client=client, status=False),
        schema=NanoAODSchema,
        chunksize=chunksize,
        savemetrics=True,
    )
    with MetricsCollector(client) as mc:
        _, report = runner(fileset, processor_instance=Analysis(extra_us), treename=TREE)
        mc.set_coffea_report(report)
    return mc.get_metrics()


def gather(args: argparse.Namespace) -> list[tuple[str, int, dict[str, Any]]]:
    """Every run's (kind, burners beside it, metrics)."""
    from distributed import Client, LocalCluster

    from roastcoffea import RoastPlugin
    from roastcoffea.demo.nanoaod import generate

    data = Path(tempfile.mkdtemp(prefix="roastcoffea-gate-"))
    paths = generate(data, args.events, 2, compression="lz4:1", basket_events=2500, processes=1)
    fileset = {name: {"files": {str(path): TREE}} for name, path in zip("ab", paths, strict=True)}
    NanoAODSchema.warn_missing_crossrefs = False
    runs: list[tuple[str, int, dict[str, Any]]] = []
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        client.register_plugin(RoastPlugin())
        warm = run_once(client, fileset, args.chunksize, 0.0)
        extra = args.extra * warm["cost_per_event_us"]["b"]["all"]
        print(f"dataset b costs {extra / args.extra:.1f} us per event; extra {extra:.1f} us")
        for n in range(args.runs):
            kind = "extra" if n % 4 == 3 else "same"
            load = (0, 1, 2)[n % 3]
            procs = burners(load)
            try:
                metrics = run_once(client, fileset, args.chunksize, extra if kind == "extra" else 0)
            finally:
                for p in procs:
                    p.kill()
            kept = {k: metrics.get(k) for k in ("raw_phase_records", "unavailable")}
            runs.append((kind, load, kept))
            print(f"run {n + 1}/{args.runs}: {kind}, {load} burners", flush=True)
    return runs


def rates(runs: list[tuple[str, int, dict[str, Any]]], per_side: int) -> dict[str, Any]:
    """False alarms among comparisons of identical runs; detections against extra runs.

    One run per side: consecutive identical runs, each run in one comparison. Several:
    :data:`DRAWS` random draws of distinct runs (seeded), a side of identical runs against
    another, or against a side of extra runs.
    """
    import numpy as np

    from roastcoffea.metrics.regression import compare_runs

    same = [m for kind, _, m in runs if kind == "same"]
    extra = [m for kind, _, m in runs if kind == "extra"]
    if per_side == 1:
        nulls = [([a], [b]) for a, b in zip(same[::2], same[1::2], strict=False)]
        tests = [([a], [b]) for a, b in zip(same[1::2], extra, strict=False)]
    else:
        rng = np.random.default_rng(1)
        nulls, tests = [], []
        for _ in range(DRAWS):
            picked = rng.choice(len(same), 2 * per_side, replace=False)
            nulls.append(
                ([same[i] for i in picked[:per_side]], [same[i] for i in picked[per_side:]])
            )
            before = rng.choice(len(same), per_side, replace=False)
            after = rng.choice(len(extra), per_side, replace=False)
            tests.append(([same[i] for i in before], [extra[i] for i in after]))
    alarms = sum(any(c.marked for c in compare_runs(a, b).changes) for a, b in nulls)
    caught = also = 0
    for a, b in tests:
        marked = {c.dataset for c in compare_runs(a, b).changes if c.marked and c.regression}
        caught += "b" in marked
        also += "a" in marked
    return {
        "per side": per_side,
        "identical comparisons": len(nulls),
        "false alarms": f"{alarms} ({100 * alarms / len(nulls):.1f}%)",
        "extra comparisons": len(tests),
        "b caught": f"{caught} ({100 * caught / len(tests):.1f}%)",
        "a also marked": also,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=168, help="runs in all (a fourth with extra)")
    parser.add_argument("--events", type=int, default=100000, help="events of both datasets")
    parser.add_argument("--chunksize", type=int, default=2500)
    parser.add_argument("--extra", type=float, default=0.30, help="extra cost of dataset b")
    parser.add_argument("--saved", type=Path, default=None, help="reuse runs saved here")
    parser.add_argument("--save", type=Path, default=None, help="save the runs here")
    parser.add_argument("--quick", action="store_true", help="24 runs")
    args = parser.parse_args()
    if args.quick:
        args.runs = 24
    print(f"gate rates: {machine()}")
    if args.saved is not None:
        runs = pickle.loads(args.saved.read_bytes())
    else:
        runs = gather(args)
        if args.save is not None:
            args.save.write_bytes(pickle.dumps(runs))
    rows = [rates(runs, k) for k in (1, 2, 3)]
    print(table(list(rows[0]), [list(r.values()) for r in rows]))
    print(floor(runs))
    return 0


def floor(runs: list[tuple[str, int, dict[str, Any]]]) -> str:
    """The largest change of any tested dataset and phase between consecutive identical
    runs: the quantiles that set ONE_RUN_FLOOR_PERCENT."""
    import numpy as np

    from roastcoffea.metrics.regression import compare_runs

    same = [m for kind, _, m in runs if kind == "same"]
    largest = [
        max(abs(c.change_percent) for c in compare_runs([a], [b]).changes)
        for a, b in zip(same[::2], same[1::2], strict=False)
    ]
    q50, q90, q95 = np.quantile(largest, [0.5, 0.9, 0.95])
    return (
        f"identical pairs, largest change of a dataset and phase tested: median {q50:.0f}%, "
        f"90th percentile {q90:.0f}%, 95th {q95:.0f}%, largest {max(largest):.0f}% "
        f"({len(largest)} pairs)"
    )


if __name__ == "__main__":
    sys.exit(main())
