"""The HTML report: structure, every table's text, figures, no network, no truncation.

The report of the real measured run (``measured``) is checked live (through
``MetricsCollector.save_report``) and loaded (``write_report`` of the saved
measurement), by parsing the HTML, and rendered by headless Chromium.
"""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Mapping
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from browser import run_chromium
from distributed import Client
from markupsafe import escape
from matplotlib.image import imread
from measured_run import Measured
from roast_testing import SUMMARY_TABLES

from roastcoffea import MetricsCollector, load_measurement
from roastcoffea.measurement import load_metadata
from roastcoffea.plots import catalog
from roastcoffea.plots.catalog import applicable_plots
from roastcoffea.report import tables
from roastcoffea.report.answer import answer
from roastcoffea.report.html import SECTIONS, render_report, write_report
from roastcoffea.report.tables.cells import Cell, TableData, count
from roastcoffea.units import format_time

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def distinct_colors(pixels: np.ndarray) -> int:
    """Number of distinct RGB colors of an image read by ``imread`` (floats in [0, 1])."""
    rgb = (pixels[..., :3] * 255).round().astype(np.uint32)
    return len(np.unique((rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2]))


class Page(HTMLParser):
    """What a test reads from a report: tables by title, images, addresses, sections."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, list[list[str]]] = {}
        self.images: list[dict[str, str]] = []
        self.addresses: list[str] = []
        self.section_ids: list[str] = []
        self.tooltips: list[tuple[str, str]] = []
        self.text_parts: list[str] = []
        self._title: list[str] | None = None
        self._skip = 0
        self._current: str | None = None
        self._cell: list[str] | None = None
        self._cell_title = ""
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = {k: v or "" for k, v in attrs}
        self.addresses += [attr[k] for k in ("src", "href") if k in attr]
        if tag == "section" and attr.get("class") == "block":
            self.section_ids.append(attr["id"])
        elif tag == "h3":
            self._title = []
        elif tag == "span" and attr.get("class") == "count" and self._title is not None:
            self._skip += 1
        elif tag == "tr" and self._current is not None:
            self.tables[self._current].append([])
        elif tag == "td":
            self._cell, self._cell_title = [], attr.get("title", "")
        elif tag == "img":
            self.images.append(attr)

    def handle_endtag(self, tag: str) -> None:
        if tag == "span" and self._skip:
            self._skip -= 1
        elif tag == "h3" and self._title is not None:
            self._current = " ".join("".join(self._title).split())
            self.tables[self._current] = []
            self._title = None
        elif tag == "thead" and self._current is not None:
            self.tables[self._current].pop()  # the heading row
        elif tag == "td" and self._cell is not None:
            text = " ".join("".join(self._cell).split())
            self.tables[self._current][-1].append(text)
            if self._cell_title:
                self.tooltips.append((text, self._cell_title))
            self._cell = None
        elif tag == "table":
            self._current = None

    def handle_data(self, data: str) -> None:
        self.text_parts.append(data)
        if self._title is not None and not self._skip:
            self._title.append(data)
        if self._cell is not None:
            self._cell.append(data)

    @property
    def text(self) -> str:
        return " ".join(" ".join(self.text_parts).split())


def shown(cell: Cell) -> str:
    """The text a cell shows in the report."""
    return f"{cell.text} {cell.reason}" if cell.missing else cell.text


def expected_rows(table: TableData) -> list[list[str]]:
    return [[shown(cell) for cell in row] for row in table.rows]


def assert_tables_written(page: Page, expected: list[TableData]) -> None:
    for table in expected:
        assert table.title in page.tables, table.title
        assert page.tables[table.title] == expected_rows(table), table.title


# ---- the measured run, live and loaded -------------------------------------------------


Report = tuple[dict[str, Any], dict[str, Any], Path]


@pytest.fixture(scope="module")
def live_report(measured: Measured, tmp_path_factory: pytest.TempPathFactory) -> Report:
    """(metrics, metadata, report file) of the measured run, by its collector."""
    path = measured.collector.save_report(tmp_path_factory.mktemp("live") / "live.html")
    return measured.metrics, load_metadata(measured.path), path


@pytest.fixture(scope="module")
def loaded_report(measured: Measured, tmp_path_factory: pytest.TempPathFactory) -> Report:
    """(metrics, metadata, report file) of the saved measured run, loaded."""
    metrics, t0, t1 = load_measurement(measured.path)
    metadata = load_metadata(measured.path)
    directory = tmp_path_factory.mktemp("loaded")
    return (
        metrics,
        metadata,
        write_report(directory / "sub" / "r.html", metrics, metadata, t0=t0, t1=t1),
    )


@pytest.fixture(params=["live", "loaded"])
def report(request: pytest.FixtureRequest, live_report: Report, loaded_report: Report) -> Report:
    """The report of the measured run, live and loaded."""
    return live_report if request.param == "live" else loaded_report


def test_report_structure(report: Report) -> None:
    metrics, metadata, path = report
    text = path.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    assert "<script" not in text.lower() and "<link" not in text.lower()
    assert text.count("<style>") == 1
    page = Page(text)
    assert page.section_ids == [anchor for anchor, _ in SECTIONS]
    assert "<title>roastcoffea report: measured</title>" in text
    assert "roastcoffea report: measured" in page.text
    start = metadata["start_utc"][:19].replace("T", " ")
    end = metadata["end_utc"][:19].replace("T", " ")
    assert f"Start {start} UTC" in page.text and f"End {end} UTC" in page.text
    duration = format_time(metadata["t1"] - metadata["t0"])
    assert f"Duration {duration}" in page.text
    events = count(metrics["total_events"])
    assert f"Events {events}" in page.text
    assert "Attention" not in page.text  # nothing failed or got lost in this run

    # The answer opens the page: the headline, then what to change, before any number card.
    opened = answer(metrics)
    head = str(escape(opened.headline))
    assert text.index(head) < text.index('id="answer"') < text.index('class="kpi')
    top = opened.findings[0]
    assert f"{top.stake} {top.change}" in page.text


def test_every_table_is_written(report: Report) -> None:
    metrics, metadata, path = report
    page = Page(path.read_text(encoding="utf-8"))
    expected = tables.build_tables(metrics)
    titles = {t.title for t in expected}
    for title in (*SUMMARY_TABLES, "Chunks per Dataset", "Sections"):
        assert title in titles, title
    assert_tables_written(page, expected)
    unavailable = tables.unavailable_table(metrics)
    assert unavailable is not None and len(unavailable.rows) == len(metrics["unavailable"])
    assert_tables_written(page, [unavailable])
    # The live report's metadata was made when it was written, not when the run was saved.
    page.tables["Measurement"] = [r for r in page.tables["Measurement"] if r[0] != "Saved (UTC)"]
    for table in tables.metadata_tables(metadata):
        rows = tuple(row for row in table.rows if row[0].text != "Saved (UTC)")
        assert_tables_written(page, [TableData(table.title, table.columns, rows)])
    versions = page.tables["Software Versions"]
    assert ["roastcoffea", metadata["versions"]["roastcoffea"]] in versions
    assert ["Workers", "2"] in page.tables["Cluster Shape"]
    assert any(row[0] == "Memory limit" for row in page.tables["Cluster Shape"])
    datasets = [row[0] for row in page.tables["Chunks per Dataset"]]
    assert datasets == ["dy", "dimuon", "ttbar"]
    prefixes = [row[0] for row in page.tables["Fine Metrics per Task Prefix"]]
    assert "MeasuredProcessor" in prefixes
    measurement = dict(map(tuple, page.tables["Measurement"]))
    assert measurement["Name"] == "measured"
    assert measurement["Native Data File"] == "native_state.json"


def test_every_figure_is_an_inline_png(report: Report) -> None:
    metrics, _, path = report
    text = path.read_text(encoding="utf-8")
    page = Page(text)
    entries = applicable_plots(metrics)
    assert len(entries) >= 20
    assert len(page.images) == len(entries)
    assert 'class="figure-error"' not in text
    assert [img["alt"] for img in page.images] == [entry.title for entry in entries]
    for img in page.images:
        prefix = "data:image/png;base64,"
        assert img["src"].startswith(prefix)
        png = base64.b64decode(img["src"][len(prefix) :], validate=True)
        assert png.startswith(PNG_SIGNATURE)
        pixels = imread(io.BytesIO(png), format="png")
        assert pixels.shape[:2] == (int(img["height"]), int(img["width"]))
        assert distinct_colors(pixels) > 10, img["alt"]


def test_no_network_reference(report: Report) -> None:
    _, _, path = report
    text = path.read_text(encoding="utf-8")
    page = Page(text)
    assert page.addresses, "the navigation links and images are addresses"
    for address in page.addresses:
        assert address.startswith(("#", "data:image/png;base64,")), address[:80]
    assert not re.search(r"(src|href)\s*=\s*[\"']?\s*(https?:)?//", text, re.IGNORECASE)
    assert "@import" not in text and "url(" not in text


# ---- edge cases ----------------------------------------------------------------------


def _task_row(i: int) -> dict[str, Any]:
    return {
        "tasks": i,
        "erred": i % 3,
        "compute_seconds": 0.5 * i,
        "thread_cpu_seconds": 0.25 * i,
        "thread_noncpu_seconds": 0.125 * i,
    }


N = 2000


def large_metrics() -> dict[str, Any]:
    """A run with 2,000 workers, prefixes, failed chunks and sections."""
    return {
        "per_worker": {
            f"tcp://10.1.{i // 250}.{i % 250}:{40000 + i}": _task_row(i) for i in range(N)
        },
        "per_prefix": {f"prefix-{i}": {**_task_row(i), "processor": i == 0} for i in range(N)},
        "failed_chunks": [
            {
                "dataset": f"ds{i % 7}",
                "file": f"/data/f{i}.root",
                "entry_start": 100 * i,
                "entry_stop": 100 * i + 100,
                "worker": f"tcp://10.2.0.1:{i}",
                "error": f"OSError: read {i} failed",
            }
            for i in range(N)
        ],
        "num_failed_chunks": N,
        "sections": {"timing": {f"s{i}": {"count": i, "total": 1.0 * i} for i in range(N)}},
    }


def test_large_runs_are_never_truncated(tmp_path: Path) -> None:
    metrics = large_metrics()
    path = write_report(tmp_path / "large.html", metrics)
    page = Page(path.read_text(encoding="utf-8"))
    for title in ("Fine Metrics per Worker", "Fine Metrics per Task Prefix", "Failed Chunks"):
        assert len(page.tables[title]) == N, title
    assert len(page.tables["Sections"]) == N
    assert_tables_written(page, tables.build_tables(metrics))
    assert page.tables["Failed Chunks"][-1][-1] == f"OSError: read {N - 1} failed"
    assert f"{N:,} rows" in path.read_text(encoding="utf-8")
    assert f"{N:,} chunk(s) failed" in page.text  # the alert banner


def test_text_is_escaped() -> None:
    evil = '<script>alert("x")</script> & <b>'
    metrics = {
        "per_prefix": {evil: {**_task_row(1), "processor": True}},
        "unavailable": {"wall_time": f'because "{evil}"'},
        "wall_time": None,
    }
    text = render_report(metrics, {"name": evil}, title=evil)
    assert "<script" not in text and "<b>" not in text
    page = Page(text)
    assert page.tables["Fine Metrics per Task Prefix"][0][0] == evil
    assert "<title>&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &lt;b&gt;</title>" in text
    assert ("N/A " + f'because "{evil}"', f'because "{evil}"') in page.tooltips


def test_missing_values_show_the_reason_visibly_and_as_a_tooltip() -> None:
    metrics = {
        "wall_time": None,
        "core_efficiency": None,
        "unavailable": {
            "wall_time": "no clock",
            "core_efficiency": "needs total_cores: no workers",
        },
    }
    text = render_report(metrics)
    page = Page(text)
    timing = dict(map(tuple, page.tables["Timing Breakdown"]))
    assert timing["Wall Time"] == "N/A no clock"
    assert timing["Total CPU Time (thread-cpu)"] == "N/A not computed"
    assert ("N/A no clock", "no clock") in page.tooltips
    assert 'class="kpi missing" title="needs total_cores: no workers"' in text
    assert "No run metadata given" in page.text
    assert "Start N/A (not given)" in page.text


def test_a_figure_that_fails_shows_its_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(metrics: Mapping[str, Any]) -> Any:
        raise ValueError("no <data>")

    entry = catalog.PlotEntry("broken", "Broken Figure", broken)
    monkeypatch.setattr(catalog, "applicable_plots", lambda metrics: [entry])
    text = render_report({})
    assert '<p class="figure-error">ValueError: no &lt;data&gt;</p>' in text
    assert "<figcaption>Broken Figure</figcaption>" in text


def test_no_figure_applies() -> None:
    assert "No figure applies" in Page(render_report({})).text


def test_legacy_times_are_not_shown_as_dates() -> None:
    metadata = {"format": "roastcoffea_measurement_v1"}
    page = Page(render_report({}, metadata, t0=12.5, t1=20.0))
    assert "Start N/A (not a wall-clock time (roastcoffea 0.1.2))" in page.text
    assert "Duration 7.50 s" in page.text


def test_write_report_to_an_unwritable_place(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(OSError):
        write_report(blocker / "r.html", {})
    assert list(tmp_path.iterdir()) == [blocker]


def test_save_report_needs_a_finished_block(client: Client, tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="before context manager completes"):
        MetricsCollector(client).save_report(tmp_path / "r.html")
    assert not (tmp_path / "r.html").exists()


# ---- headless Chromium -----------------------------------------------------------------

#: Run after the page loaded: marks every image decoded or not (in a copy of the report only).
IMAGE_CHECK = """<script>
window.addEventListener("load", () => {
  for (const img of document.images)
    img.setAttribute("data-decoded", img.complete && img.naturalWidth > 0 ? "yes" : "no");
  document.body.setAttribute("data-checked", String(document.images.length));
});
</script>"""


def test_chromium_renders_the_report(loaded_report: Report, tmp_path: Path) -> None:
    metrics, metadata, path = loaded_report
    screenshot = tmp_path / "report.png"
    run_chromium(
        tmp_path / "profile-shot",
        f"--screenshot={screenshot}",
        "--window-size=1280,4000",
        path.as_uri(),
    )
    pixels = imread(screenshot)
    assert pixels.shape[:2] == (4000, 1280)
    assert distinct_colors(pixels) > 500, "the screenshot is (nearly) blank"
    rgb = (pixels[..., :3] * 255).round().astype(np.uint8)
    header = rgb[150, 640].astype(int)
    assert header.sum() < 300, f"the header is not dark brown: {header}"  # the CSS applied
    not_background = np.abs(rgb.astype(int) - rgb[-1, -1].astype(int)).sum(axis=-1) > 30
    assert not_background.mean() > 0.2, "too little is drawn"

    # The rendered DOM: every table title as text, every image decoded by the browser.
    checked = tmp_path / "checked.html"
    checked.write_text(path.read_text(encoding="utf-8").replace("</body>", IMAGE_CHECK + "</body>"))
    dom = run_chromium(
        tmp_path / "profile-dom", "--virtual-time-budget=10000", "--dump-dom", checked.as_uri()
    ).stdout
    n = len(applicable_plots(metrics))
    assert f'data-checked="{n}"' in dom
    assert dom.count('data-decoded="yes"') == n and 'data-decoded="no"' not in dom
    page = Page(dom)
    expected = tables.build_tables(metrics) + tables.metadata_tables(metadata)
    for table in expected:
        assert table.title in page.tables, table.title


#: Run after the page loaded at 1,024 x 768: what a reader sees and whether anything overflows.
LAYOUT_CHECK = """<script>
window.addEventListener("load", () => {
  const b = document.body, fold = window.innerHeight;
  b.setAttribute("data-page-overflow", String(document.documentElement.scrollWidth > innerWidth));
  const first = document.querySelector("#answer li");
  b.setAttribute("data-first-finding-bottom", String(first.getBoundingClientRect().bottom));
  b.setAttribute("data-fold", String(fold));
  b.setAttribute("data-width", String(innerWidth));
  const cut = [];
  for (const box of document.querySelectorAll(".kpi, .answer, .card, header .wrap"))
    for (const el of [box, ...box.querySelectorAll("*")])
      if (el.scrollWidth > el.clientWidth + 1 && !el.closest(".scroll") && el.clientWidth > 0
          && getComputedStyle(el).overflowX !== "auto")
        cut.push(el.className || el.tagName);
  b.setAttribute("data-cut", cut.join("|"));
});
</script>"""


def test_the_answer_is_on_the_first_screen_at_1024_px(
    loaded_report: Report, tmp_path: Path
) -> None:
    metrics, _, path = loaded_report
    checked = tmp_path / "checked.html"
    checked.write_text(
        path.read_text(encoding="utf-8").replace("</body>", LAYOUT_CHECK + "</body>")
    )
    dom = run_chromium(
        tmp_path / "profile",
        "--window-size=1024,768",
        "--virtual-time-budget=10000",
        "--dump-dom",
        checked.as_uri(),
    ).stdout
    body = re.search(r"<body([^>]*)>", dom)
    assert body is not None, dom[:2000]
    found = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', body[1]))
    assert found["page-overflow"] == "false"
    assert found["cut"] == "", f"content wider than its box: {found['cut']}"
    # The viewport of a 1,024 x 768 window (headless Chromium keeps some of its height).
    assert found["width"] == "1024" and float(found["fold"]) >= 600
    assert float(found["first-finding-bottom"]) <= float(found["fold"])
    assert answer(metrics).findings[0].change in Page(dom).text


@pytest.mark.parametrize(
    ("wide", "expected"),
    [
        ([False, True, True], [True, True, True]),  # alone before wide cards
        ([True, False, False], [True, False, False]),  # two share a row
        ([False, False, False], [False, False, True]),  # the third is alone
        ([False], [True]),
        ([False, False, True, False], [False, False, True, True]),
    ],
)
def test_no_card_is_left_alone_on_half_a_row(wide: list[bool], expected: list[bool]) -> None:
    from roastcoffea.report.html import _fill_rows

    cards = [{"wide": w} for w in wide]
    _fill_rows(cards)
    assert [c["wide"] for c in cards] == expected
