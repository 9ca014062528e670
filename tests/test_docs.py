"""The documentation site builds offline with every warning an error (`make docs`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.build


def test_the_site_builds_without_a_warning() -> None:
    done = subprocess.run(
        ["make", "--no-print-directory", "docs"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    html = ROOT / "build" / "docs" / "html"
    pages = {p.stem for p in html.glob("*.html")}
    assert {"index", "guide", "tutorial", "metrics", "api", "changelog"} <= pages
    api = (html / "api.html").read_text(encoding="utf-8")
    for name in ("MetricsCollector", "RoastPlugin", "track_metrics", "load_measurement"):
        assert f'id="roastcoffea.{name}"' in api, name
