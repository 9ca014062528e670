"""The tutorial notebooks of docs/notebooks run, cell by cell, in a real Jupyter kernel."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "docs" / "notebooks").glob("*.ipynb"))

#: They start their own LocalCluster.
pytestmark = pytest.mark.cluster


def test_there_are_tutorials() -> None:
    assert {p.stem for p in NOTEBOOKS} >= {"quickstart", "sections", "phases", "compare"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_tutorial_runs_without_an_error(path: Path, tmp_path: Path) -> None:
    copy = Path(shutil.copy(path, tmp_path))  # it writes its data next to itself
    notebook = nbformat.read(copy, as_version=4)
    NotebookClient(notebook, timeout=600, kernel_name="python3").execute(cwd=str(tmp_path))
    errors = [o for c in notebook.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert errors == []


def live_outputs(notebook: nbformat.NotebookNode) -> list[str]:
    """The HTML of every live view the notebook shows."""
    return [
        o.data["text/html"]
        for cell in notebook.cells
        for o in cell.get("outputs", [])
        if o.output_type == "display_data" and "roastcoffea-live" in o.data.get("text/html", "")
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_saved_live_views_end_on_the_blocks_figures(path: Path) -> None:
    """What the docs site shows: each live view ends on the whole block's figures."""
    views = live_outputs(nbformat.read(path, as_version=4))
    for view in views:
        assert "(finished: the whole block, from the final flush)" in view, path.name
        events = re.search(r">Events</th><td[^>]*>([^<]*)</td>", view)
        assert events is not None and events.group(1) not in ("", "0"), path.name


def test_the_tutorials_show_live_views() -> None:
    assert sum(len(live_outputs(nbformat.read(p, as_version=4))) for p in NOTEBOOKS) >= 4
