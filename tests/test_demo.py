"""The `roastcoffea demo` command: a real run, and its tables."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from roastcoffea.cli import main
from roastcoffea.demo import run_demo
from roastcoffea.demo.tables import print_snapshot


@pytest.mark.filterwarnings("ignore:Port 8787 is already in use")
def test_demo_measures_every_task_and_prints_tables() -> None:
    snap = run_demo(n_tasks=10, task_seconds=0.005)
    tasks = {prefix: stats["tasks"] for prefix, stats in snap["prefixes"].items()}
    assert tasks == {"burn": 10, "nap": 10, "combine": 2}
    assert len(snap["workers"]) == 2
    out = io.StringIO()
    print_snapshot(snap, Console(file=out, width=160))
    text = out.getvalue()
    for title in ("Workers", "Task prefixes", "Monitoring self-report", "burn", "combine"):
        assert title in text


def test_cli_requires_a_command() -> None:
    with pytest.raises(SystemExit):
        main([])
