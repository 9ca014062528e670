"""Names are data: datasets named like mathtext, markup and HTML are drawn and shown as written.

A real coffea run over one CMS file under three hostile dataset names, saved; ``roastcoffea
plot`` and ``report`` run on it as a user runs them.
"""

from __future__ import annotations

import html
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from distributed import Client
from measured_run import MeasuredProcessor, dask_runner

from roastcoffea import MetricsCollector, load_measurement
from roastcoffea.plots.catalog import applicable_plots

pytestmark = pytest.mark.cluster

#: An unknown TeX macro, a lone dollar with markup, and HTML.
NAMES = (r"$\undefinedmacro{x}$", "cost $5 [bold]x[/bold]", "<script>alert(1)</script>")
SCRIPT = Path(sys.executable).parent / "roastcoffea"


@pytest.fixture(scope="module")
def saved(client: Client, cms_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    fileset = {name: {"files": {str(cms_data / "nano_dy.root"): "Events"}} for name in NAMES}
    with warnings.catch_warnings(), MetricsCollector(client, live=False) as mc:
        warnings.simplefilter("ignore", RuntimeWarning)  # NanoAODSchema's, about the file
        _, report = dask_runner(client)(fileset, MeasuredProcessor(), treename="Events")
        mc.set_coffea_report(report)
    return mc.save_measurement(tmp_path_factory.mktemp("hostile"), "hostile")


def run(*args: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=600
    )


def test_plot_draws_every_figure_with_hostile_names(saved: Path, tmp_path: Path) -> None:
    done = run("plot", saved, "-o", tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "rror" not in done.stderr, done.stderr
    expected = {f"{entry.name}.png" for entry in applicable_plots(load_measurement(saved)[0])}
    assert {p.name for p in tmp_path.glob("*.png")} == expected


def test_report_keeps_every_figure_and_shows_the_names_escaped(saved: Path, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    done = run("report", saved, "-o", page)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("\n") <= 1 and "rror" not in done.stderr, done.stderr
    text = page.read_text()
    assert "<script>alert(1)</script>" not in text
    for name in NAMES:
        assert html.escape(name) in text, name


def test_show_prints_the_names_as_written(saved: Path) -> None:
    done = run("show", saved, "--all")
    assert done.returncode == 0, done.stderr
    for name in NAMES:
        assert name in done.stdout, name
