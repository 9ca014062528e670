"""The documentation site builds offline with every warning an error (`make docs`)."""

from __future__ import annotations

import pytest
from make_target import ROOT, make

pytestmark = pytest.mark.build


def test_the_site_builds_without_a_warning() -> None:
    make("docs")
    html = ROOT / "build" / "docs" / "html"
    pages = {p.stem for p in html.glob("*.html")}
    assert {"index", "guide", "tutorial", "metrics", "api", "changelog"} <= pages
    api = (html / "api.html").read_text(encoding="utf-8")
    for name in ("MetricsCollector", "RoastPlugin", "track_metrics", "load_measurement"):
        assert f'id="roastcoffea.{name}"' in api, name
