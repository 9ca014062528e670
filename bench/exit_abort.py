"""Exits of ``roastcoffea compare GOOD BAD``: all 2, none aborted by Arrow's threads.

What it measures: a measurement of 1,000 chunk records of the demo's shape is saved
(GOOD), and four copies have their ``chunks.parquet`` broken: truncated, bytes
flipped in its pages, replaced by a dictionary bomb (one 1 MiB string named by
3,000 rows) and by a file without roastcoffea's description. ``roastcoffea compare
GOOD BAD`` runs N times in fresh interpreters, two at a time, the four kinds in
turn, and the exit codes are counted: 2 is the one-line refusal, 134 (SIGABRT) an
abort at exit ("terminate called without an active exception"). The suite runs a
few hundred (tests/test_hostile_parquet.py); this runs the rest.

Run: ``.venv/bin/python bench/exit_abort.py`` (about 5 minutes; ``--runs`` to change).
"""

from __future__ import annotations

import argparse
import io
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from common import machine, table
from scale_measurement import T0, chunk, snapshot

from roastcoffea.measurement import save_measurement
from roastcoffea.metrics import MetricsInputs, compute_metrics

CHUNKS = 1_000
#: How an abort shows: killed by SIGABRT, or a shell's 128 + 6.
ABORTED = (-6, 134)


def good(root: Path) -> Path:
    chunks = [chunk(i) for i in range(CHUNKS)]
    inputs = MetricsInputs(
        snapshot=snapshot(CHUNKS),
        t_start=T0,
        t_end=T0 + CHUNKS,
        wall_time=float(CHUNKS),
        coffea_report={"entries": CHUNKS * 100_000, "chunks": CHUNKS},
        chunks=chunks,
    )
    return save_measurement(compute_metrics(inputs), T0, T0 + CHUNKS, root, "good")


def truncated(data: bytes) -> bytes:
    return data[:-100]


def flipped(data: bytes) -> bytes:
    out = bytearray(data)
    for i in range(200, min(len(out) - 100, 2200), 7):
        out[i] ^= 0x5A
    return bytes(out)


def dictionary_bomb(_: bytes) -> bytes:
    one = pa.array(["x" * (1 << 20)])
    described = b'{"envelope": {"kind": "chunk", "v": 1}, "json_columns": [], "irregular": []}'
    bomb = pa.table({"file": pa.chunked_array([one] * 3000)})
    buffer = io.BytesIO()
    pq.write_table(
        bomb.replace_schema_metadata({b"roastcoffea.records": described}),
        buffer,
        compression="zstd",
        dictionary_pagesize_limit=2 << 20,
    )
    return buffer.getvalue()


def undescribed(data: bytes) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(pq.read_table(pa.BufferReader(data)).replace_schema_metadata({}), buffer)
    return buffer.getvalue()


BREAKS = {
    "truncated": truncated,
    "flipped": flipped,
    "bomb": dictionary_bomb,
    "undescribed": undescribed,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=1_000)
    args = parser.parse_args(argv)
    print(machine())
    print()
    with tempfile.TemporaryDirectory() as tmp:
        base = good(Path(tmp))
        bad = {}
        for name, damage in BREAKS.items():
            bad[name] = Path(tmp) / name
            shutil.copytree(base, bad[name])
            target = bad[name] / "chunks.parquet"
            target.write_bytes(damage(target.read_bytes()))

        def exit_code(i: int) -> tuple[str, int]:
            name = list(BREAKS)[i % len(BREAKS)]
            command = [sys.executable, "-m", "roastcoffea.cli", "compare", base, bad[name]]
            return name, subprocess.run(command, capture_output=True, timeout=300).returncode

        with ThreadPoolExecutor(2) as pool:
            codes = Counter(pool.map(exit_code, range(args.runs)))
    rows = []
    for name in BREAKS:
        mine = {code: n for (kind, code), n in codes.items() if kind == name}
        aborts = sum(mine.get(code, 0) for code in ABORTED)
        others = ", ".join(f"{c}: {n}" for c, n in sorted(mine.items()) if c not in (2, *ABORTED))
        rows.append([name, sum(mine.values()), mine.get(2, 0), aborts, others or "-"])
    print(table(["broken file", "runs", "exit 2", "SIGABRT", "other exits"], rows))
    aborted = sum(n for (_, code), n in codes.items() if code in ABORTED)
    print(f"\n{args.runs:,} exits, {aborted} aborted")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
