"""Instructions a Dask worker executes for one analysis, bare and collected, counted by valgrind.

What it measures: the ``Analysis`` processor of ``bench/workload.py`` on the demo's synthetic
NanoAOD, with coffea ``Runner`` + ``DaskExecutor``, on two clusters at once, each a scheduler
with one worker process (``dask worker --nthreads 1 --no-nanny``, started with the nanny's
``distributed.nanny.pre-spawn-environ``) running under ``valgrind --tool=callgrind``: the
bare run (undecorated processor, no plugin) on one, the collected run (``@track_metrics``,
the plugin, inside ``MetricsCollector``) on the other. Callgrind counts every instruction of
every thread of the worker: its tasks, the worker plugin at task ends, the records' encoding
and sending, heartbeats, Dask's profiler, the garbage collector. Each worker counts only
around the measured runs (``bench/callgrind_switch.c``, called in the worker), after a
warm-up run of each variant and a full garbage collection; then, per round: collected /
bare and the extra instructions per chunk, with 95 % confidence intervals over the rounds
(Student's t).

A count does not depend on the machine's speed, which drifts here by 20 % within seconds,
so a few rounds resolve what CPU time needs hundreds of pairs for; but it is not time (the
caches, the branch predictors and the kernel's work do not show), and under valgrind the
worker runs about 30 times slower, so whatever Dask does on a timer runs 30 times more
often per chunk than at full speed. The largest such work is Dask's statistical profiler,
which walks each running task's stack every 10 ms: the script runs each chunk size with the
profiler on (as Dask ships) and off (``distributed.worker.profile.enabled``), the second
being the monitoring's own work. Nothing is asserted; the script prints figures.

Run: ``.venv/bin/python bench/chunk_instructions.py`` (about 25 minutes; ``--quick``: 2
rounds of 20 small chunks, about 3 minutes). Needs valgrind and its headers (Debian:
``valgrind``).
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from common import data_dir, interval, machine, table

HERE = Path(__file__).resolve().parent
#: chunk size -> (events, files of the data set, files read): 100 chunks and 12 chunks.
SIZES = {1_000: (200_000, 2, 1), 100_000: (2_000_000, 8, 4)}
QUICK_SIZES = {1_000: (20_000, 1, 1)}
VARIANTS = ("bare", "collected")


def build_switch(directory: Path) -> Path:
    """Compile bench/callgrind_switch.c into ``directory``; the library's path."""
    library = directory / "callgrind_switch.so"
    source = HERE / "callgrind_switch.c"
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", library, source], check=True)
    return library


def count_from_zero(library: str) -> None:
    """In a worker: start counting its instructions."""
    import ctypes

    ctypes.CDLL(library).count_from_zero()


def stop_and_dump(library: str, name: str) -> None:
    """In a worker: stop counting and write the count, named ``name``."""
    import ctypes

    ctypes.CDLL(library).stop_and_dump(name.encode())


def start_worker(address: str, name: str, out: Path, profiler: bool) -> subprocess.Popen:
    """A worker process under callgrind, counting nothing until told to."""
    import dask

    environ = {
        str(k): str(v) for k, v in dask.config.get("distributed.nanny.pre-spawn-environ").items()
    }
    env = {
        **os.environ,
        **environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        "PYTHONHASHSEED": "0",
        "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": str(profiler),
    }
    command = [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        f"--callgrind-out-file={out / name}.%p",
        sys.executable,
        "-m",
        "distributed.cli.dask_worker",
        address,
        "--nthreads",
        "1",
        "--no-nanny",
        "--no-dashboard",
        "--name",
        name,
    ]
    log = open(out / f"{name}.log", "w")  # noqa: SIM115 - closed with the process's end
    return subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)


def run(client: Any, variant: str, fileset: dict, chunksize: int) -> None:
    """One run of the analysis: bare, or collected as a user runs it."""
    from coffea import processor
    from coffea.nanoevents import NanoAODSchema
    from workload import TREE, Analysis, BareAnalysis

    from roastcoffea import MetricsCollector

    runner = processor.Runner(
        executor=processor.DaskExecutor(client=client, status=False),
        schema=NanoAODSchema,
        chunksize=chunksize,
        savemetrics=True,
    )
    if variant == "bare":
        runner(fileset, processor_instance=BareAnalysis(), treename=TREE)
        return
    proc = Analysis()
    with MetricsCollector(client, processor_instance=proc) as collector:
        output, report = runner(fileset, processor_instance=proc, treename=TREE)
        collector.extract_metrics_from_output(output)
        collector.set_coffea_report(report)


def both(clients: dict[str, Any], fileset: dict, chunksize: int) -> None:
    """The two variants at once, each on its cluster."""
    failed: list[BaseException] = []

    def one(variant: str) -> None:
        try:
            run(clients[variant], variant, fileset, chunksize)
        except BaseException as exc:
            failed.append(exc)

    threads = [threading.Thread(target=one, args=(v,)) for v in VARIANTS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failed:
        raise failed[0]


def counts(out: Path, name: str) -> int:
    """The instructions of the dump named ``name`` in ``out``."""
    for path in out.glob("*.*.*"):
        text = path.read_text(errors="replace")
        if f"Client Request: {name}\n" in text:
            found = re.search(r"^totals: (\d+)", text, re.M)
            if found:
                return int(found.group(1))
    raise RuntimeError(f"no callgrind dump named {name} in {out}")


def measure(files: list[str], chunksize: int, rounds: int, profiler: bool, library: Path) -> dict:
    """Instructions of each variant's worker per round, under one profiler setting."""
    from coffea.nanoevents import NanoAODSchema
    from distributed import Client, LocalCluster

    from roastcoffea import RoastPlugin

    NanoAODSchema.warn_missing_crossrefs = False
    fileset = {"synthetic": {"files": dict.fromkeys(files, "Events")}}
    found: dict[str, list[int]] = {v: [] for v in VARIANTS}
    with tempfile.TemporaryDirectory() as scratch, ExitStack() as stack:
        out = Path(scratch)
        clients, workers = {}, []
        for variant in VARIANTS:
            cluster = stack.enter_context(
                LocalCluster(n_workers=0, processes=True, dashboard_address=":0")
            )
            clients[variant] = stack.enter_context(Client(cluster))
            workers.append(start_worker(cluster.scheduler_address, variant, out, profiler))
        stack.callback(lambda: [w.terminate() or w.wait(120) for w in workers])
        for client in clients.values():
            client.wait_for_workers(1, timeout=600)
        clients["collected"].register_plugin(RoastPlugin())
        both(clients, fileset, chunksize)  # warm-up: imports, page cache, tree indexes
        for i in range(rounds):
            for client in clients.values():
                client.run(gc.collect)
                client.run(count_from_zero, str(library))
            both(clients, fileset, chunksize)
            for variant, client in clients.items():
                client.run(stop_and_dump, str(library), f"{variant}-{i}")
            for variant in VARIANTS:
                found[variant].append(counts(out, f"{variant}-{i}"))
            print(f"  round {i + 1}/{rounds}", flush=True)
    return found


def report(chunksize: int, chunks: int, rounds: int, results: dict[str, dict]) -> None:
    rows = []
    for setting, found in results.items():
        bare, collected = found["bare"], found["collected"]
        ratios = [c / b for b, c in zip(bare, collected, strict=True)]
        extra = [(c - b) / chunks / 1e6 for b, c in zip(bare, collected, strict=True)]
        ratio, low, high = interval(ratios)
        more, more_low, more_high = interval(extra)
        rows.append(
            [
                setting,
                f"{sum(bare) / len(bare) / chunks / 1e6:,.1f}",
                f"{sum(collected) / len(collected) / chunks / 1e6:,.1f}",
                f"{ratio:.4f} ({low:.4f} to {high:.4f})",
                f"{more:+.2f} ({more_low:+.2f} to {more_high:+.2f})",
            ]
        )
    print(
        table(
            [
                f"{chunks} chunks of {chunksize:,} events, {rounds} rounds",
                "bare, M per chunk",
                "collected, M per chunk",
                "collected / bare (95% CI)",
                "extra M per chunk (95% CI)",
            ],
            rows,
        )
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds per setting (5)")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="chunk sizes")
    parser.add_argument("--quick", action="store_true", help="20 small chunks, 2 rounds")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None or not Path("/usr/include/valgrind/callgrind.h").exists():
        print("valgrind and its headers are not installed (Debian: apt-get install valgrind)")
        return 1
    from roastcoffea.demo.nanoaod import ensure_files

    sizes = QUICK_SIZES if args.quick else {size: SIZES[size] for size in args.sizes}
    rounds = 2 if args.quick else args.rounds
    print(f"worker instructions: valgrind --tool=callgrind, both variants at once; {machine()}")
    with tempfile.TemporaryDirectory() as build:
        library = build_switch(Path(build))
        for chunksize, (events, n_files, read) in sizes.items():
            paths = ensure_files(data_dir(events, n_files), events, n_files)[:read]
            chunks = read * -(-events // n_files // chunksize)
            print(f"\nchunks of {chunksize:,} events: {chunks} per run", flush=True)
            results = {}
            for profiler in (True, False):
                setting = f"Dask's profiler {'on' if profiler else 'off'}"
                print(f" {setting}", flush=True)
                results[setting] = measure(
                    [str(p) for p in paths], chunksize, rounds, profiler, library
                )
            report(chunksize, chunks, rounds, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
