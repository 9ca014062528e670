"""The tutorial notebooks of docs/notebooks run, cell by cell, in a real Jupyter kernel."""

from __future__ import annotations

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
