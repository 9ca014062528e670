"""A crafted ``chunks.parquet`` is refused by what it decodes to, cheaply, in one line.

Each bomb of :mod:`parquet_bombs` is a few bytes to a few hundred kilobytes that
decode to gigabytes, or columns roastcoffea never writes. A measurement holding one
is refused by ``roastcoffea show`` with exit 2 and one line naming the file and the
bound, while the process's resident memory grows by less than 256 MiB over what
it held before the command (the kernel's high-water mark, reset at that point).
What is accepted costs no more than its estimate; a load starts no thread, so the
interpreter's exit has none of Arrow's to abort on, and a few hundred exits of
``roastcoffea compare GOOD BAD`` all end with exit 2.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tracemalloc
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import dask
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from measured_run import Measured
from parquet_bombs import BOMBS, json_bomb

from roastcoffea import DecodeError, load_measurement
from roastcoffea.formats import parquet_bounds
from roastcoffea.formats.parquet import read_parquet, write_parquet

PEAK_GROWTH = 256 << 20
#: Exits of ``compare GOOD BAD`` the suite runs (bench/exit_abort.py runs 1,000).
EXITS = 300

#: A process that runs one command of the CLI and writes its exit code and how much its
#: resident memory grew over what it held just before (VmHWM after clear_refs).
MEASURE = """
import json, os, sys
from roastcoffea.cli import main
import pyarrow.parquet

def kib(field):
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field))

with open("/proc/self/clear_refs", "w") as refs:
    refs.write("5")
before = kib("VmRSS:")
code = main(sys.argv[2:])
with open(sys.argv[1], "w") as out:
    json.dump({"code": code, "growth": (kib("VmHWM:") - before) * 1024}, out)
"""


def with_chunks(source: Path, data: bytes, into: Path, name: str = "chunks.parquet") -> Path:
    """A copy of the measurement ``source`` whose chunk (or phase) records are ``data``."""
    target = into / "m"
    shutil.copytree(source, target)
    (target / name).write_bytes(data)
    return target


@pytest.fixture(scope="module")
def saved(measured: Measured) -> Path:
    """The shared measurement, which keeps its chunk and phase records in Parquet files."""
    metadata = json.loads((measured.path / "metadata.json").read_text())
    assert metadata["chunks_file"] and metadata["phases_file"]
    return measured.path


@pytest.mark.parametrize("bomb", list(BOMBS))
def test_a_bomb_is_refused_in_one_line_before_it_is_decoded(
    bomb: str, saved: Path, tmp_path: Path
) -> None:
    make, says = BOMBS[bomb]
    directory = with_chunks(saved, make(), tmp_path)
    result = tmp_path / "result.json"
    run = subprocess.run(
        [sys.executable, "-c", MEASURE, str(result), "show", str(directory)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    measured = json.loads(result.read_text())
    assert (run.returncode, measured["code"]) == (0, 2), run.stderr
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    assert f"{directory / 'chunks.parquet'}: " in lines[0] and says in lines[0], lines[0]
    assert measured["growth"] < PEAK_GROWTH, f"{measured['growth']:,} bytes"


def test_the_phase_records_are_held_to_the_same_bound(saved: Path, tmp_path: Path) -> None:
    make, says = BOMBS["dictionary bomb"]
    directory = with_chunks(saved, make(), tmp_path, "phases.parquet")
    with pytest.raises(DecodeError, match=rf"phases\.parquet: {says}"):
        load_measurement(directory)


def test_the_limit_is_a_setting(saved: Path, tmp_path: Path) -> None:
    directory = with_chunks(saved, (saved / "chunks.parquet").read_bytes(), tmp_path)
    assert load_measurement(directory)[0]["raw_chunk_metrics"]
    refused = r"above the limit of 1\.00 kiB \(setting roastcoffea\.max-records-bytes\)"
    with (
        dask.config.set({"roastcoffea.max-records-bytes": "1KiB"}),
        pytest.raises(DecodeError, match=refused),
    ):
        load_measurement(directory)


def demo_records(n: int) -> list[dict]:
    """``n`` chunk records of the demo's shape (as bench/scale_measurement.py makes them)."""
    return [
        {
            "kind": "chunk", "v": 1, "task_key": f"processor-4f2a9c-{i:08d}",
            "worker": f"tcp://10.0.0.{i % 7}:8786", "dataset": ("dy", "ttbar")[i % 2],
            "file": f"/data/nano_{i % 40:03d}.root", "entry_start": i * 1000,
            "entry_stop": (i + 1) * 1000, "num_events": 1000, "t_start": 1.7e9 + i,
            "duration": 0.5 + i * 1e-6, "timing": {"jets": 0.1, "muons": 0.2},
            "accessed_branches": [f"Branch_{b}" for b in range(24)], "unavailable": {},
        }
        for i in range(n)
    ]  # fmt: skip


def test_what_is_accepted_costs_no_more_than_its_estimate() -> None:
    """The estimate is from above: Python's own count of what the load allocates."""
    for data in (write_parquet(demo_records(5000)), json_bomb(rows=2, units=1000)):
        table = pq.read_table(pa.BufferReader(data))
        described = json.loads(table.schema.metadata[b"roastcoffea.records"])
        estimate = parquet_bounds.decoded_bytes(
            table, len(described["envelope"]), set(described["json_columns"])
        )
        tracemalloc.start()
        try:
            records = read_parquet(data, estimate)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert records and peak <= estimate, (peak, estimate)
        with pytest.raises(parquet_bounds.Refused):
            read_parquet(data, estimate - 1)


FUZZ = settings(
    max_examples=int(os.environ.get("ROASTCOFFEA_FUZZ_EXAMPLES", "150")),
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


#: A byte's position (modulo the file's size) and the bits to flip in it.
FLIP = st.tuples(st.integers(min_value=0), st.integers(1, 255))


@FUZZ
@given(
    name=st.sampled_from(["chunks.parquet", "phases.parquet"]),
    flips=st.lists(FLIP, min_size=1, max_size=8),
)
def test_flipped_bytes_load_or_are_refused_in_one_line(
    saved: Path, tmp_path_factory: pytest.TempPathFactory, name: str, flips: list[tuple[int, int]]
) -> None:
    """Whatever bytes of a Parquet file are changed: its records load, or the load is one
    DecodeError naming the file, never another exception."""
    data = bytearray((saved / name).read_bytes())
    for at, mask in flips:
        data[at % len(data)] ^= mask
    note(f"{name}: {flips}")
    directory = with_chunks(saved, bytes(data), tmp_path_factory.mktemp("flipped"), name)
    try:
        load_measurement(directory)
    except DecodeError as exc:
        assert "\n" not in str(exc) and str(exc).startswith(str(directory / name)), exc


def thread_count() -> int:
    return len(os.listdir("/proc/self/task"))


def test_a_load_starts_no_thread(saved: Path, tmp_path: Path) -> None:
    """Arrow's thread pools are started by their first task and joined by a static
    destructor, which aborts when a thread is still running at exit: no load starts one."""
    bad = with_chunks(saved, BOMBS["dictionary bomb"][0](), tmp_path / "bad")
    truncated = with_chunks(saved, (saved / "chunks.parquet").read_bytes()[:-100], tmp_path / "t")
    code = f"""
import os
from roastcoffea import load_measurement
import pyarrow.parquet
before = len(os.listdir("/proc/self/task"))
load_measurement({str(saved)!r})
for path in ({str(bad)!r}, {str(truncated)!r}):
    try:
        load_measurement(path)
    except ValueError:
        pass
    else:
        raise SystemExit("accepted " + path)
print(before, len(os.listdir("/proc/self/task")))
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    before, after = map(int, run.stdout.split())
    assert after == before


def test_compare_good_bad_exits_with_2_every_time(saved: Path, tmp_path: Path) -> None:
    bad = with_chunks(saved, (saved / "chunks.parquet").read_bytes()[:-100], tmp_path)
    command = [sys.executable, "-m", "roastcoffea.cli", "compare", str(saved), str(bad)]

    def exit_code(_: int) -> int:
        return subprocess.run(command, capture_output=True, timeout=120).returncode

    with ThreadPoolExecutor(2) as pool:
        codes = Counter(pool.map(exit_code, range(EXITS)))
    assert codes == {2: EXITS}
