"""The ``roastcoffea`` command, run as a subprocess on a real saved measurement."""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from measured_run import Measured
from roast_testing import SUMMARY_TABLES

from roastcoffea import __version__, load_measurement, save_measurement
from roastcoffea.measurement import load_metadata
from roastcoffea.plots.catalog import applicable_plots
from roastcoffea.report.answer import answer
from roastcoffea.units import format_time

#: The installed console script, next to this interpreter.
SCRIPT = Path(sys.executable).parent / "roastcoffea"

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    assert SCRIPT.is_file(), f"console script missing: {SCRIPT}"
    return subprocess.run(
        [str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=300
    )


def assert_one_line_error(result: subprocess.CompletedProcess[str], status: int, *words: str):
    assert result.returncode == status, result
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])


@pytest.mark.parametrize("command", [None, "demo", "show", "report", "plot", "compare"])
def test_every_command_has_help(command: str | None) -> None:
    result = run(*([command] if command else []), "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: roastcoffea")
    if command is None:
        for name in ("demo", "show", "report", "plot", "compare"):
            assert name in result.stdout


def test_version() -> None:
    result = run("--version")
    assert (result.returncode, result.stdout.strip()) == (0, f"roastcoffea {__version__}")


def without(modules: tuple[str, ...], *args: str | Path) -> subprocess.CompletedProcess[str]:
    """The command in an interpreter where ``modules`` cannot be imported (as if not installed)."""
    code = (
        "import sys\n"
        f"for name in {modules!r}: sys.modules[name] = None\n"
        "from roastcoffea.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, timeout=300
    )


def test_plotting_without_matplotlib_names_the_extra(measured: Measured, tmp_path: Path) -> None:
    for args in (("plot", measured.path), ("compare", measured.path, measured.path, "--plot", "f")):
        result = without(("matplotlib",), *args)
        assert_one_line_error(result, 2, "needs matplotlib", "pip install 'roastcoffea[plot]'")
    # A report needs no figure: it is written, and says why it has none.
    result = without(("matplotlib",), "report", measured.path, "-o", tmp_path / "r.html")
    assert result.returncode == 0, result.stderr
    assert "No figures: matplotlib is not installed." in (tmp_path / "r.html").read_text()


def test_the_demo_without_coffea_names_the_extra(tmp_path: Path) -> None:
    result = without(("awkward", "coffea"), "demo", "--output", tmp_path)
    assert_one_line_error(result, 2, "needs coffea, awkward", "pip install 'roastcoffea[coffea]'")
    assert list(tmp_path.iterdir()) == []


def test_report_and_plot_show_progress_on_a_terminal(measured: Measured, tmp_path: Path) -> None:
    for command in ("report", "plot"):
        leader, follower = pty.openpty()
        child = subprocess.Popen(
            [str(SCRIPT), command, str(measured.path), "-o", str(tmp_path / command)],
            stdout=subprocess.PIPE,
            stderr=follower,
            text=True,
            env={**os.environ, "COLUMNS": "120", "TERM": "xterm"},
        )
        os.close(follower)
        # Drained while the child runs: a terminal's buffer is small, and a child whose
        # progress bar fills it blocks until someone reads.
        shown = _drain(leader)
        stdout, _ = child.communicate(timeout=300)
        assert child.returncode == 0
        assert b"figures" in shown, shown  # the bar's text, drawn on the terminal
        assert "figures" not in stdout.replace("figures written", "")


def _drain(fd: int) -> bytes:
    """Everything written to the terminal ``fd`` until its last writer closed it."""
    shown = b""
    try:
        while chunk := os.read(fd, 65536):
            shown += chunk
    except OSError:  # EIO: the terminal closed, everything was read
        pass
    finally:
        os.close(fd)
    return shown


def test_show_opens_with_the_answer_on_one_screen(measured: Measured) -> None:
    result = run("show", measured.path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) <= 24 and max(map(len, lines)) <= 80, result.stdout
    start = load_metadata(measured.path)["start_utc"][:19].replace("T", " ")
    assert lines[0] == f"measured, started {start} UTC"
    text = " ".join(result.stdout.split())
    assert f"{measured.metrics['total_events']:,} events in " in text
    assert "What to change, the largest wall time at stake first:" in text
    top = answer(measured.metrics).findings[0]
    assert " ".join(f"1. {top.stake}: {top.change}".split()) in text
    assert "Throughput Metrics" not in text  # the tables are behind --all and --table
    assert "--all" in lines[-1] and "--table NAME" in lines[-1]


def test_show_all_prints_the_answer_then_every_table(measured: Measured) -> None:
    result = run("show", measured.path, "--all")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert text.index("What to change") < text.index("Throughput Metrics")
    for title in (*SUMMARY_TABLES, "Diagnosis"):
        assert title in text, title
    assert f"{measured.metrics['total_events']:,}" in text


def test_show_table_prints_the_named_tables_only(measured: Measured) -> None:
    result = run("show", measured.path, "--table", "chunk", "--table", "diagnosis")
    assert result.returncode == 0, result.stderr
    assert result.stdout.index("Chunk Metrics") < result.stdout.index("Diagnosis")
    assert "Throughput Metrics" not in result.stdout and "What to change" not in result.stdout
    wrong = run("show", measured.path, "--table", "nope")
    assert wrong.returncode == 2 and "invalid choice: 'nope'" in wrong.stderr, wrong


def corrupt_copy(measured: Measured, tmp_path: Path, name: str, text: str) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(measured.path, copy)
    (copy / name).write_text(text)
    return copy


@pytest.mark.parametrize("command", ["show", "report", "plot", "compare"])
def test_missing_measurement_is_one_line_and_status_2(
    command: str, measured: Measured, tmp_path: Path
) -> None:
    missing = tmp_path / "nowhere"
    extra = [measured.path] if command == "compare" else []
    assert_one_line_error(run(command, *extra, missing), 2, str(missing), "not found")


@pytest.mark.parametrize(
    ("name", "text"),
    [("metrics.json", '{"format": "roastcoffea-metrics", "vers'), ("metadata.json", "[]")],
)
@pytest.mark.parametrize("command", ["show", "report", "plot"])
def test_corrupt_measurement_is_one_line_and_status_2(
    command: str, name: str, text: str, measured: Measured, tmp_path: Path
) -> None:
    copy = corrupt_copy(measured, tmp_path, name, text)
    assert_one_line_error(run(command, copy), 2, str(copy / name))


def test_report_writes_one_html_file(measured: Measured, tmp_path: Path) -> None:
    output = tmp_path / "out" / "run.html"
    output.parent.mkdir()
    result = run("report", measured.path, "-o", output)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"report written to {output}"
    text = output.read_text()
    assert text.lstrip().lower().startswith("<!doctype html>")
    assert "Throughput Metrics" in text and "data:image/png;base64," in text
    assert list(output.parent.iterdir()) == [output]


def test_report_to_an_unwritable_place_is_status_1(measured: Measured, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert_one_line_error(run("report", measured.path, "-o", blocker / "r.html"), 1, "cannot write")


def test_plot_writes_every_applicable_figure(measured: Measured, tmp_path: Path) -> None:
    metrics, _, _ = load_measurement(measured.path)
    expected = {f"{entry.name}.png" for entry in applicable_plots(metrics)}
    assert len(expected) >= 20
    result = run("plot", measured.path, "-o", tmp_path / "figs")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"{len(expected)} figures written to {tmp_path / 'figs'}"
    written = {path.name: path for path in (tmp_path / "figs").iterdir()}
    assert set(written) == expected
    for path in written.values():
        assert path.read_bytes().startswith(PNG_SIGNATURE), path


def slower_copy(measured: Measured, tmp_path: Path) -> Path:
    """The measured run saved again with its wall time doubled and no chunk data."""
    metrics, t0, t1 = load_measurement(measured.path)
    metrics["wall_time"] *= 2
    metrics["event_rate_wall_khz"] /= 2
    metrics["chunk_duration_mean"] = None
    cluster = {"cluster": load_metadata(measured.path)["cluster"]}
    return save_measurement(metrics, t0, t1, tmp_path, "slower", metadata=cluster)


def test_compare_shows_deltas_and_ratios(measured: Measured, tmp_path: Path) -> None:
    slower = slower_copy(measured, tmp_path)
    figure = tmp_path / "compare.png"
    result = run("compare", measured.path, slower, "--plot", figure)
    assert result.returncode == 0, result.stderr
    rows = {line.split("│")[1].strip(): line for line in result.stdout.splitlines() if "│" in line}
    wall = measured.metrics["wall_time"]
    cells = [cell.strip() for cell in rows["wall time"].split("│")[2:-1]]
    shown = [format_time(v) for v in (wall, 2 * wall)]
    assert cells == [*shown, f"+{shown[0]}", "2.000x"]
    cells = [cell.strip() for cell in rows["mean chunk duration"].split("│")[2:-1]]
    assert cells[1:] == ["N/A", "N/A", "N/A"]
    cells = [cell.strip() for cell in rows["events"].split("│")[2:-1]]
    assert cells[-2:] == ["+0", "1.000x"]
    assert "measured (baseline)" in result.stdout and "slower" in result.stdout
    assert figure.read_bytes().startswith(PNG_SIGNATURE)


def test_compare_tells_runs_saved_under_one_name_apart(measured: Measured, tmp_path: Path) -> None:
    metrics, t0, t1 = load_measurement(measured.path)
    first = save_measurement(metrics, t0, t1, tmp_path / "before", "demo")
    second = save_measurement(metrics, t0, t1, tmp_path / "after", "demo")
    result = run("compare", first, second)
    assert result.returncode == 0, result.stderr
    header = result.stdout.replace("\n", " ")
    assert "before/demo (baseline)" in header and "after/demo" in header


def test_compare_needs_two_measurements(measured: Measured) -> None:
    assert_one_line_error(run("compare", measured.path), 2, "at least two")


def test_outside_names_are_shown_as_text(measured: Measured, tmp_path: Path) -> None:
    # A measurement's name is its directory's: rich markup and terminal control
    # sequences in it are printed as they are written, never interpreted.
    metrics, t0, t1 = load_measurement(measured.path)
    marked = save_measurement(metrics, t0, t1, tmp_path, "[red on red]x [link=javascript:1]y")
    control = save_measurement(metrics, t0, t1, tmp_path, "clear\x1b[2Jscreen")
    result = run("compare", marked, control)
    assert result.returncode == 0, result.stderr
    assert "[red on red]x [link=javascript:1]y (baseline)" in result.stdout.replace("\n", "")
    assert "\x1b" not in result.stdout
    assert "clear\\x1b[2Jscreen" in result.stdout
    shown = run("show", control)
    assert shown.returncode == 0 and "\x1b" not in shown.stdout, shown.stderr
