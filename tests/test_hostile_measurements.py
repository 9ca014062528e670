"""A measurement from anywhere: malformed or hostile files are one line and exit 2, never more.

Every subcommand (show, report, plot, compare) and ``load_measurement`` meet the same
crafted directories: what the loader refuses is a ``DecodeError`` naming the file and
the field, on one line, without the file's content; what it accepts renders. A fuzz test
(hypothesis, derandomized so the suite is repeatable; ``ROASTCOFFEA_FUZZ_EXAMPLES`` runs
more) mutates a real measurement at random places.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import re
import shutil
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dask
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from measured_run import Measured

from roastcoffea import DecodeError, load_measurement
from roastcoffea.cli import main as cli
from roastcoffea.measurement import load_metadata
from roastcoffea.report.html import render_report

OLD = Path(__file__).parent / "data" / "measurement-0.1.2" / "2026-11-24_11-51-59"
#: Text planted in the hostile files: no message may show it.
SECRET = "s3cr3t-content"
FUZZ_EXAMPLES = int(os.environ.get("ROASTCOFFEA_FUZZ_EXAMPLES", "150"))


def copy(source: Path, into: Path) -> Path:
    target = into / "m"
    shutil.copytree(source, target)
    return target


def edit_json(path: Path, change: Callable[[Any], None]) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def metrics_edit(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    return lambda m: edit_json(m / "metrics.json", lambda d: change(d["metrics"]))


def legacy_edit(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    return lambda m: edit_json(m / "metrics.json", change)


def nest(depth: int) -> Any:
    value: Any = SECRET
    for _ in range(depth):
        value = [value]
    return value


def sparse(name: str, size: int) -> Callable[[Path], None]:
    def make(m: Path) -> None:
        with open(m / name, "wb") as file:
            file.truncate(size)

    return make


def link_outside(m: Path) -> None:
    outside = m.parent / "elsewhere.txt"
    outside.write_text(f"{SECRET}\n")
    (m / "start_end_time.txt").unlink()
    (m / "start_end_time.txt").symlink_to(outside)


def set_key(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda d: d.__setitem__(key, value)


def counts_dated(y: int) -> Callable[[Path], None]:
    """The worker counts of tracking_data at one instant of year ``y``."""
    instant = {"$datetime": f"{y:04d}-01-01T00:00:00+00:00"}
    counts = {"$dict": [[instant, 2]]}
    return metrics_edit(lambda d: d["tracking_data"].__setitem__("worker_counts", counts))


#: (case, base: "ours" or "0.1.2", mutation, what the one-line message says)
CASES: list[tuple[str, str, Callable[[Path], None], str]] = [
    ("wall time of 400 digits", "ours", metrics_edit(set_key("wall_time", 10**399)),
     r"metrics\['wall_time'\]: a number beyond"),
    ("t1 infinite", "ours", lambda m: (m / "start_end_time.txt").write_text("1.0,inf\n"),
     "start_end_time.txt: the times are not finite"),
    ("t1 infinite in metadata", "ours",
     lambda m: edit_json(m / "metadata.json", set_key("t1", {"$float": "inf"})),
     r"metadata\.json\[.t1.\]: expected a finite number"),
    ("0.1.2 nested 600 deep", "0.1.2", legacy_edit(set_key("deep", nest(600))),
     "nested deeper than 100 levels"),
    ("0.1.2 worker_counts a list", "0.1.2",
     legacy_edit(lambda d: d["tracking_data"].__setitem__("worker_counts", [SECRET])),
     r"tracking_data\['worker_counts'\]: expected a mapping, found a list"),
    ("0.1.2 tuple key of 100,000 characters", "0.1.2",
     legacy_edit(lambda d: d["raw_span_metrics"].__setitem__("(" + "1," * 50_000 + ")", 1.0)),
     r"raw_span_metrics'\] \(a key\): expected a span metric key"),
    ("per_dataset entry not a table", "ours",
     metrics_edit(set_key("per_dataset", {"ds": SECRET})),
     r"metrics\['per_dataset'\]\['ds'\]: expected a mapping, found a text of 14 characters"),
    ("metadata versions a list", "ours",
     lambda m: edit_json(m / "metadata.json", set_key("versions", [SECRET])),
     r"metadata\.json\['versions'\]: expected a mapping, found a list"),
    ("chunk records not dicts", "ours", metrics_edit(set_key("raw_chunk_metrics", [1, SECRET])),
     r"metrics\['raw_chunk_metrics'\]\[0\]: expected a mapping, found an integer"),
    ("tracking data of year 1", "ours", counts_dated(1), "a time outside 1970-2200"),
    ("tracking data of year 9999", "ours", counts_dated(9999), "a time outside 1970-2200"),
    ("metrics.json above the size limit", "ours", sparse("metrics.json", 3 << 20),
     r"metrics\.json: 3145728 bytes, above the limit of 2097152"),
    ("a file that links outside", "ours", link_outside,
     "start_end_time.txt: refused: it resolves outside the measurement directory"),
    ("a FIFO", "ours",
     lambda m: ((m / "metrics.json").unlink(), os.mkfifo(m / "metrics.json")),
     r"metrics\.json: not a regular file"),
    ("a tag's content", "ours", metrics_edit(set_key("x", {"$float": SECRET})),
     r"metrics\['x'\]: a \$float tag holding a text"),
    ("an unknown tag", "ours", metrics_edit(set_key("x", {"$" + SECRET: 1})),
     r"metrics\['x'\]: unknown or malformed \$-tag"),
    ("a bad format", "ours", lambda m: edit_json(m / "metrics.json", set_key("format", SECRET)),
     r"metrics\.json: not a roastcoffea file"),
    ("timing not numbers", "ours", lambda m: (m / "start_end_time.txt").write_text(SECRET),
     "start_end_time.txt: invalid timing format"),
]  # fmt: skip


@pytest.fixture(params=CASES, ids=[case[0] for case in CASES])
def hostile(request: pytest.FixtureRequest, measured: Measured, tmp_path: Path) -> tuple[Path, str]:
    _, base, mutate, message = request.param
    directory = copy(measured.path if base == "ours" else OLD, tmp_path)
    mutate(directory)
    return directory, message


@pytest.fixture(autouse=True)
def small_limit() -> Any:
    with dask.config.set({"roastcoffea.max-measurement-bytes": "2MiB"}):
        yield


def test_the_loader_names_the_file_and_field_on_one_line(hostile: tuple[Path, str]) -> None:
    directory, message = hostile
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError, match=message) as caught:
            load_measurement(directory)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    text = str(caught.value)
    assert "\n" not in text and SECRET not in text and len(text) < 500
    assert peak < 64 << 20  # no file above the limit was read


@pytest.mark.parametrize("command", ["show", "report", "plot", "compare"])
def test_every_subcommand_says_it_in_one_line_and_exits_2(
    hostile: tuple[Path, str], command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory, message = hostile
    args = {
        "show": [str(directory)],
        "report": [str(directory), "-o", str(tmp_path / "r.html")],
        "plot": [str(directory), "-o", str(tmp_path / "plots")],
        "compare": [str(directory), str(directory)],
    }[command]
    assert cli([command, *args]) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and SECRET not in err and SECRET not in out
    assert err.startswith(f"roastcoffea {command}: error: cannot read measurement: ")
    assert re.search(message, err)


# ---- fuzzing -------------------------------------------------------------------------


def json_values() -> st.SearchStrategy[Any]:
    """JSON values, including tagged ones and the extremes a hostile file would hold."""
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(10**30), max_value=10**30),
        st.sampled_from([10**400, -(10**19), 2**63, 0, -1]),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=20),
        st.sampled_from(
            [
                {"$float": "inf"},
                {"$float": "nan"},
                {"$datetime": "0001-01-01T00:00:00+00:00"},
                {"$datetime": "9999-12-31T00:00:00+00:00"},
                {"$datetime": "2026-01-01T00:00:00"},
                {"$tuple": ["a", "b"]},
                {"$bytes": "AAA="},
                {"$set": [1]},
            ]
        ),
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.dictionaries(st.text(max_size=8), inner, max_size=3),
        ),
        max_leaves=8,
    )


def paths_of(value: Any, prefix: tuple[Any, ...] = (), depth: int = 0) -> list[tuple[Any, ...]]:
    """Every path into a JSON tree, down to ``depth`` 5."""
    found = [prefix]
    if depth >= 5:
        return found
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths_of(item, (*prefix, key), depth + 1)
    elif isinstance(value, list):
        for i, item in enumerate(value[:3]):
            found += paths_of(item, (*prefix, i), depth + 1)
    return found


def replaced(tree: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(tree, dict):
        return {**tree, head: replaced(tree[head], rest, value)}
    out = list(tree)
    out[head] = replaced(tree[head], rest, value)
    return out


class Base:
    """A copy of a real measurement, its metrics.json and metadata.json as JSON (shown short)."""

    FILES = ("metrics.json", "metadata.json")

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.data = {name: json.loads((directory / name).read_text()) for name in self.FILES}
        self.paths = {name: paths_of(data) for name, data in self.data.items()}

    def __repr__(self) -> str:
        return f"Base({self.directory})"


@pytest.fixture(scope="module")
def base(measured: Measured, tmp_path_factory: pytest.TempPathFactory) -> Base:
    return Base(copy(measured.path, tmp_path_factory.mktemp("fuzz")))


def mutate(base: Base, pick: int, value: Any) -> Path:
    """Write the base with the value at one path of one file replaced (a metadata path one
    time in five)."""
    name = base.FILES[pick % 5 == 0]
    paths = base.paths[name]
    path = paths[(pick // 5) % len(paths)]
    note(f"replaced at {name} {path}")
    for each, data in base.data.items():
        changed = replaced(data, path, value) if each == name else data
        (base.directory / each).write_text(json.dumps(changed))
    return base.directory


def load_or_refuse(directory: Path) -> Any:
    """The metrics, or None when refused with a one-line DecodeError naming its file."""
    try:
        return load_measurement(directory)
    except DecodeError as exc:
        assert "\n" not in str(exc) and ("metrics.json" in str(exc) or "metadata.json" in str(exc))
        return None


FUZZ = settings(
    max_examples=FUZZ_EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def run_cli(*args: str) -> tuple[int, str]:
    """The command's exit status and what it wrote to stderr."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        status = cli(list(args))
    return status, err.getvalue()


@FUZZ
@given(pick=st.integers(min_value=0), value=json_values())
def test_show_and_compare_either_print_or_refuse_in_one_line(
    base: Base, pick: int, value: Any
) -> None:
    directory = str(mutate(base, pick, value))
    for args in (
        ("show", directory),
        ("show", directory, "--all"),
        ("compare", directory, directory),
    ):
        status, err = run_cli(*args)
        if status == 2:
            assert err.count("\n") == 1 and "cannot read measurement" in err, err
        else:
            assert (status, err) == (0, ""), err


@settings(FUZZ, max_examples=max(FUZZ_EXAMPLES // 25, 4))
@given(pick=st.integers(min_value=0), value=json_values())
def test_what_the_loader_accepts_the_report_draws_without_a_failure(
    base: Base, pick: int, value: Any, caplog: pytest.LogCaptureFixture
) -> None:
    directory = mutate(base, pick, value)
    loaded = load_or_refuse(directory)
    if loaded is None:
        return
    metrics, t0, t1 = loaded
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="roastcoffea"):
        render_report(metrics, load_metadata(directory), t0=t0, t1=t1, title="fuzz")
    assert [r.getMessage() for r in caplog.records] == []
