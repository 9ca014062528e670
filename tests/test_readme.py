"""The README's Quick start, run verbatim as a script, twice, beside the file it reads."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from make_target import ROOT

from roastcoffea import load_measurement

pytestmark = pytest.mark.cluster

DATA = Path(__file__).parent / "data"


def quick_start() -> str:
    """The Python block of the README's Quick start section."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    return block


def test_the_quick_start_runs_as_pasted_twice_and_keeps_both_runs(tmp_path: Path) -> None:
    script = tmp_path / "quick_start.py"
    script.write_text(quick_start())
    shutil.copy(DATA / "nano_dy.root", tmp_path)
    runs = [
        subprocess.run(
            [sys.executable, script.name], cwd=tmp_path, capture_output=True, text=True,
            timeout=600,
        )
        for _ in range(2)
    ]  # fmt: skip
    for run in runs:
        assert run.returncode == 0, run.stderr[-3000:]
        assert "Throughput Metrics" in run.stdout
    first, second = tmp_path / "benchmarks" / "run1", tmp_path / "benchmarks" / "run1-2"
    assert "saved as" in runs[1].stderr and str(Path("benchmarks") / "run1-2") in runs[1].stderr
    events = [load_measurement(p)[0]["total_events"] for p in (first, second)]
    assert events[0] == events[1] > 0
