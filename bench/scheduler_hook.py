"""Cost of the scheduler `transition` hook, in ns per call, C hook versus Python.

What it measures: the time the Dask scheduler spends in one plugin's `transition` hook,
for these hooks side by side in one process:

  (a) roastcoffea's C hook `roastcoffea._native.Aggregator().transition`, called as Dask
      calls it: through a `RoastPlugin` whose `transition` attribute is the bound C
      method, exactly as `RoastPlugin.start` sets it ("C hook on RoastPlugin"); and, for
      comparison, through a bare `Aggregator` object, where the attribute lookup creates
      a bound method on every call ("C hook via Aggregator()");
  (b) an empty Python method `def transition(self, key, start, finish, *args, **kwargs)`,
      and an empty C method (`bench/null_hook.c`, compiled at start with this Python's
      compiler): the cheapest hook there is, so its cost is Dask's call itself, the floor
      every hook pays;
  (c) `bench/reference_plugin.py`, a pure-Python SchedulerPlugin doing the same
      bookkeeping as the C engine (key_split, per-prefix counts, startstops sums,
      nbytes, worker, erred count), aggregated inline.

How: the calls are made the way `SchedulerState._transition` makes them, a loop over the
plugins dict calling `plugin.transition(key, start, finish, stimulus_id=..., **kwargs)`
inside try/except, with one plugin in the dict. One more arm runs the same loop with no
plugin; subtracting it gives the net cost of the call itself ("net"). The event stream
is what a `client.map` workload produces: 6 transitions per task (released->waiting->
queued->processing->memory->released->forgotten), only processing->memory carrying
Dask's task-finished kwargs (worker, metadata, nbytes, type, typename, thread,
startstops, status); 0.5% of tasks err instead, with Dask's erred kwargs. Keys are
realistic and distinct: `inc-<32 hex>` strings and tuple keys such as
`("getitem-<32 hex>", i)`, fresh ones every round so no key_split cache starts warm. The
scheduler's `tasks` and `task_groups` dicts, where the hooks find a task's span, are built
as Dask builds them (slotted TaskState and TaskGroup stand-ins, groups named by
`distributed.utils.key_split_group`).

Each round generates a fresh stream and runs every arm over it, the arms interleaved
chunk by chunk (1,000 tasks) in an order rotated every chunk, so that bursts of load from
other jobs fall on all arms alike; then it runs every arm again over the calls without
kwargs only and over the calls with kwargs only (the breakdown by call shape). The C
hook only pushes a record into its ring; the ring is drained after every 1,000 tasks,
outside the hook timing, and the drain is timed separately and reported amortized per
call, since on the scheduler the sampler pays it on the same thread. Ratios are computed
per round (paired) and summarized by their median and interquartile range. Nothing is
asserted; the script prints figures, the engine's own timing of the inside of the hook,
and a check that the C aggregator and the reference plugin counted the same tasks.

Targets: C / empty <= 1.5 and
reference / C >= 5, with the C hook on RoastPlugin. The second is shown two ways: on the
net cost per call, and above the floor (each arm less the empty C method), which compares
what the hooks themselves do.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import pickle
import random
import shlex
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from types import ModuleType

from common import machine, median, spread, table, verdict
from distributed.utils import key_split_group
from reference_plugin import ReferencePlugin

from roastcoffea import _native
from roastcoffea.plugin import RoastPlugin

TASKS_PER_CHUNK = 1000
WORKERS = [f"tcp://127.0.0.1:{40000 + i}" for i in range(8)]
COLLECTIONS = ("inc", "getitem", "add", "sum-partial", "from-uproot", "processor")
INT_TYPE = pickle.dumps(int)
BASE = "loop only (no plugin)"
EMPTY = "empty Python method"
FLOOR = "empty C method (call floor)"
C_PLUGIN = "C hook on RoastPlugin"
C_BARE = "C hook via Aggregator()"
REFERENCE = "Python reference plugin"


class TaskGroup:
    """What the hooks read of distributed's TaskGroup (slotted, like Dask's)."""

    __slots__ = ("name", "span_id")

    def __init__(self, name, span_id: str) -> None:
        self.name = name
        self.span_id = span_id


class TaskState:
    """What the hooks read of distributed's TaskState (slotted, like Dask's)."""

    __slots__ = ("group", "key")

    def __init__(self, key, group: TaskGroup) -> None:
        self.key = key
        self.group = group


class EmptyPlugin:
    """The cheapest possible Python hook."""

    def transition(self, key, start, finish, *args, **kwargs):
        pass


def load_null_hook(build_dir: Path) -> ModuleType:
    """Compiles and imports bench/null_hook.c, a C hook that does nothing.

    Built with the compiler this Python was built with, as an extension like ours, so
    its call costs what a C extension's call costs.
    """
    source = Path(__file__).with_name("null_hook.c")
    target = build_dir / f"null_hook{sysconfig.get_config_var('EXT_SUFFIX')}"
    compiler = shlex.split(sysconfig.get_config_var("CC") or "cc")
    flags = ["-O2", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}"]
    subprocess.run([*compiler, *flags, str(source), "-o", str(target)], check=True)
    spec = importlib.util.spec_from_file_location("null_hook", target)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_keys(n: int, rng: random.Random) -> list:
    """n distinct task keys, in collections of 1-200 tasks like a real graph."""
    keys: list = []
    while len(keys) < n:
        name = rng.choice(COLLECTIONS)
        size = min(rng.randint(1, 200), n - len(keys))
        token = f"{rng.getrandbits(128):032x}"
        if name == "inc":
            keys += [f"inc-{rng.getrandbits(128):032x}" for _ in range(size)]
        elif name == "sum-partial":
            keys += [(f"{name}-{token}", i, 0) for i in range(size)]
        else:
            keys += [(f"{name}-{token}", i) for i in range(size)]
    return keys


def finished_kwargs(rng: random.Random, worker: str, t: float) -> dict:
    """Dask's task-finished kwargs (TaskFinishedMsg fields), sometimes with a transfer."""
    startstops: tuple = ({"action": "compute", "start": t, "stop": t + 0.01},)
    if rng.random() < 0.1:
        source = rng.choice(WORKERS)
        fetch = {"action": "transfer", "start": t - 0.004, "stop": t - 0.001, "source": source}
        startstops = (fetch, *startstops)
    return {
        "worker": worker,
        "metadata": {},
        "nbytes": rng.choice((28, 1234, 80_000, 4_000_000)),
        "type": INT_TYPE,
        "typename": "int",
        "thread": 140_000_000_000 + WORKERS.index(worker),
        "startstops": startstops,
        "status": "OK",
    }


def erred_kwargs(key, worker: str, t: float) -> dict:
    """Dask's task-erred kwargs."""
    return {
        "cause": key,
        "worker": worker,
        "exception": b"\x80\x04\x95pickled ZeroDivisionError",
        "traceback": b"\x80\x04\x95pickled traceback",
        "exception_text": "ZeroDivisionError('division by zero')",
        "traceback_text": '  File "analysis.py", line 12, in process\n',
        "thread": 140_000_000_000,
        "startstops": ({"action": "compute", "start": t, "stop": t + 0.01},),
        "status": "error",
    }


def make_round(n_tasks: int, rng: random.Random, t0: float) -> tuple[list[list], dict, dict, int]:
    """Transition events in chunks of TASKS_PER_CHUNK tasks, and the scheduler's tasks and
    task_groups dicts (groups named by distributed's key_split_group, as Dask does).

    Within a chunk the order follows the scheduler: the graph arrives (released->waiting->
    queued for all), tasks run and finish one by one (queued->processing->memory), then the
    client releases them (memory->released->forgotten).
    """
    keys = make_keys(n_tasks, rng)
    spans = [f"{rng.getrandbits(128):032x}" for _ in range(3)]
    task_groups: dict = {}
    tasks: dict = {}
    for key in keys:
        name = key_split_group(key)
        if name not in task_groups:
            task_groups[name] = TaskGroup(name, rng.choice(spans))
        tasks[key] = TaskState(key, task_groups[name])
    chunks, calls, no_kwargs = [], 0, {}
    for c in range(0, n_tasks, TASKS_PER_CHUNK):
        chunk_keys = keys[c : c + TASKS_PER_CHUNK]
        t = t0 + c * 0.01
        graph_sid, release_sid = f"update-graph-{t}", f"client-releases-keys-{t + 5}"
        events = []
        for key in chunk_keys:
            events.append((key, "released", "waiting", graph_sid, no_kwargs))
            events.append((key, "waiting", "queued", graph_sid, no_kwargs))
        last = []
        for i, key in enumerate(chunk_keys):
            worker, tf = WORKERS[i % len(WORKERS)], t + i * 0.01
            finished_sid = f"task-finished-{tf}"
            events.append((key, "queued", "processing", finished_sid, no_kwargs))
            if rng.random() < 0.005:
                events.append(
                    (key, "processing", "erred", finished_sid, erred_kwargs(key, worker, tf))
                )
                last.append((key, "erred"))
            else:
                kwargs = finished_kwargs(rng, worker, tf)
                events.append((key, "processing", "memory", finished_sid, kwargs))
                last.append((key, "memory"))
        for key, state in last:
            events.append((key, state, "released", release_sid, no_kwargs))
            events.append((key, "released", "forgotten", release_sid, no_kwargs))
        calls += len(events)
        chunks.append(events)
    return chunks, tasks, task_groups, calls


def drive(plugins: dict, events: list) -> tuple[int, int]:
    """The scheduler's plugin loop (SchedulerState._transition); returns (ns, failures)."""
    failures = 0
    t0 = time.perf_counter_ns()
    for key, start, finish, stimulus_id, kwargs in events:
        for plugin in list(plugins.values()):
            try:
                plugin.transition(key, start, finish, stimulus_id=stimulus_id, **kwargs)
            except Exception:
                failures += 1
    return time.perf_counter_ns() - t0, failures


def run_pass(arms: dict, chunks: list[list], shift: int) -> dict[str, list[int]]:
    """Runs every arm over every chunk, the arms interleaved chunk by chunk in an order
    rotated every chunk, so that the machine's bursts of load fall on all arms alike.
    Returns {arm: [hook ns, drain ns, failures]}."""
    gc.collect()
    names = list(arms)
    totals = {name: [0, 0, 0] for name in names}
    for i, events in enumerate(chunks):
        k = (i + shift) % len(names)
        for name in names[k:] + names[:k]:
            plugins, agg = arms[name]
            ns, failed = drive(plugins, events)
            total = totals[name]
            total[0] += ns
            total[2] += failed
            if agg is not None:
                t0 = time.perf_counter_ns()
                agg.drain()
                total[1] += time.perf_counter_ns() - t0
    return totals


def c_totals(agg) -> dict[str, float]:
    rows = agg.to_dict()["tasks"]
    names = ("tasks", "erred", "compute_seconds", "transfer_seconds", "output_bytes")
    return {name: sum(row[name] for row in rows) for name in names}


def agree(a: dict[str, float], b: dict[str, float]) -> list[str]:
    """Names whose totals differ (float sums compared to 1e-9 relative)."""
    return [k for k in a if abs(a[k] - b[k]) > 1e-9 * max(1.0, abs(a[k]), abs(b[k]))]


def roast_plugin(agg) -> RoastPlugin:
    """A RoastPlugin as Dask sees it after `start`: `transition` is the bound C method,
    stored as an instance attribute (the one line of RoastPlugin.start that matters here;
    the rest of start needs a scheduler)."""
    plugin = RoastPlugin()
    plugin.transition = agg.transition
    return plugin


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5 rounds of 10,000 tasks")
    parser.add_argument("--tasks", type=int, default=None, help="tasks per round (50,000)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (15)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    n_tasks = args.tasks or (10_000 if args.quick else 50_000)
    rounds = args.rounds or (5 if args.quick else 15)

    agg = _native.Aggregator(started=1.7e9)
    bare = _native.Aggregator(started=1.7e9)
    reference = ReferencePlugin()
    with tempfile.TemporaryDirectory() as build_dir:
        null_hook = load_null_hook(Path(build_dir))
    arms = {
        BASE: ({}, None),
        FLOOR: ({"null": null_hook}, None),
        EMPTY: ({"empty": EmptyPlugin()}, None),
        C_PLUGIN: ({"roastcoffea": roast_plugin(agg)}, agg),
        C_BARE: ({"roastcoffea": bare}, bare),
        REFERENCE: ({"reference": reference}, None),
    }
    names = list(arms)
    passes = ("all", "no kwargs", "with kwargs")
    per_call = {(p, name): [] for p in passes for name in names}
    drain_per_call: list[float] = []
    rng = random.Random(args.seed)
    failures = 0
    for r in range(rounds):
        chunks, tasks, task_groups, calls = make_round(n_tasks, rng, 1.7e9 + 1000 * r)
        agg.set_span_lookup(tasks, task_groups)
        bare.set_span_lookup(tasks, task_groups)
        reference.tasks, reference.task_groups = tasks, task_groups
        split = {
            "all": chunks,
            "no kwargs": [[e for e in events if not e[4]] for events in chunks],
            "with kwargs": [[e for e in events if e[4]] for events in chunks],
        }
        for p in passes:
            n_calls = sum(len(events) for events in split[p])
            for name, (hook_ns, drain_ns, failed) in run_pass(arms, split[p], r).items():
                failures += failed
                per_call[p, name].append(hook_ns / n_calls)
                if p == "all" and name == C_PLUGIN:
                    drain_per_call.append(drain_ns / n_calls)

    base = per_call["all", BASE]
    empty, c_hook = per_call["all", EMPTY], per_call["all", C_PLUGIN]
    floor = per_call["all", FLOOR]
    ref = per_call["all", REFERENCE]
    c_all = [h + d for h, d in zip(c_hook, drain_per_call, strict=True)]

    def net(values: list[float], p: str = "all") -> list[float]:
        return [v - b for v, b in zip(values, per_call[p, BASE], strict=True)]

    def ratio(num: list[float], den: list[float]) -> list[float]:
        return [n / d for n, d in zip(num, den, strict=True)]

    print(f"scheduler_hook: {rounds} rounds x {calls:,} transition calls")
    print(
        f"  ({n_tasks:,} tasks x 6 transitions, fresh keys each round,"
        " arms interleaved chunk by chunk)"
    )
    print(f"  {machine()}")
    print()
    rows = []
    for name, values in (
        (BASE, base),
        (FLOOR, floor),
        (EMPTY, empty),
        (C_PLUGIN, c_hook),
        ("  + ring drain, amortized", c_all),
        (C_BARE, per_call["all", C_BARE]),
        (REFERENCE, ref),
    ):
        net_cells = ["", ""] if values is base else spread(net(values))
        rows.append([name, *spread(values), *net_cells])
    print(table(["hook (all transitions)", "ns/call", "IQR", "net ns/call", "IQR"], rows))
    print()

    rows = []
    for name in names[1:]:
        rows.append(
            [name]
            + [f"{median(net(per_call[p, name], p)):.0f}" for p in ("no kwargs", "with kwargs")]
        )
    print(table(["net ns/call by call shape", "no kwargs (5/6)", "with kwargs (1/6)"], rows))
    print()

    def above_floor(values: list[float]) -> list[float]:
        return [v - f for v, f in zip(values, floor, strict=True)]

    c_empty = ratio(net(c_hook), net(empty))
    ref_c = ratio(net(ref), net(c_hook))
    ref_c_all = ratio(net(ref), net(c_all))
    ref_floor = ratio(net(ref), net(floor))
    work = ratio(above_floor(ref), above_floor(c_hook))
    work_all = ratio(above_floor(ref), above_floor(c_all))
    gross = ratio(c_hook, empty)
    rows = [
        ["C / empty (net)", *spread(c_empty, 2), "<= 1.5"],
        ["C / empty (gross)", *spread(gross, 2)],
        ["reference / C (net)", *spread(ref_c, 1), ">= 5"],
        ["reference / (C + drain) (net)", *spread(ref_c_all, 1)],
        ["reference / empty C method (net)", *spread(ref_floor, 1)],
        ["reference / C, above the floor", *spread(work, 1), ">= 5"],
        ["reference / (C + drain), above the floor", *spread(work_all, 1)],
    ]
    rows[0].append(verdict(median(c_empty) <= 1.5))
    rows[2].append(verdict(median(ref_c) >= 5))
    rows[5].append(verdict(median(work) >= 5))
    print(table(["ratio, paired per round", "median", "IQR", "target", ""], rows))
    print(
        "  net: less the loop without a plugin; above the floor: less the empty C method, the"
        " cost of Dask's call itself, which every hook pays"
    )
    print()

    counters = agg.counters
    in_c = counters["hook_ns_per_call"] - median(drain_per_call)
    mismatched = agree(c_totals(agg), reference.totals())
    print(
        f"inside the C hook (the engine's own sampled timing, less the drain): ~{in_c:.0f} ns/call;"
        f" the rest of the net cost is CPython's call with stimulus_id=..., **kwargs"
    )
    print(
        f"C engine: hook_calls={counters['hook_calls']:,}, events={counters['events']:,}, "
        f"dropped_events={counters['dropped_events']}, hook_errors={counters['hook_errors']}; "
        f"loop failures={failures}"
    )
    print(
        "C aggregator and reference agree on tasks, erred, compute_seconds, transfer_seconds, "
        f"output_bytes: {'yes' if not mismatched else 'NO, differ on ' + ', '.join(mismatched)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
