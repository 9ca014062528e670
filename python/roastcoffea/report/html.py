"""The HTML report of a measurement: one self-contained file.

Everything is inline: the style sheet, and every figure as a
``data:image/png;base64,`` image drawn by
:func:`roastcoffea.plots.catalog.applicable_plots`. The page has no script and
names no external address, so it opens offline, from a mail attachment or a CI
artifact, and prints. Tables come from :mod:`roastcoffea.report.tables`, and
every row is written (long tables scroll in their box, and print in full). A
value that could not be measured shows ``N/A`` with its reason, visible and as
a tooltip.

Sections, in order: header (title, measurement, UTC start and end, duration,
key figures, alerts), summary tables, fine metrics, figures, chunks (chunk,
dataset and section statistics), run metadata, monitoring overhead.
"""

from __future__ import annotations

import base64
import importlib.util
import io
import logging
import os
import re
from collections.abc import Collection, Mapping
from datetime import datetime, timezone
from html import escape
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from roastcoffea.measurement import LEGACY_FORMAT
from roastcoffea.report import tables
from roastcoffea.report.tables import Cell, TableData

logger = logging.getLogger(__name__)

#: Resolution of the embedded figures: sharp at their displayed size, files stay small.
FIGURE_DPI = 120
#: Width of the embedded figures in inches: two figures side by side keep readable text.
FIGURE_WIDTH = 8.0
#: Rows of a table shown before its box scrolls (on screen; print shows all).
SCROLL_ROWS = 25


def _e(text: Any) -> str:
    return escape(str(text), quote=True)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


# ---- tables ---------------------------------------------------------------------------


def _td(cell: Cell, numeric: bool) -> str:
    classes = ["num"] if numeric else []
    if cell.indent:
        classes.append(f"indent-{min(cell.indent, 3)}")
    if cell.alert:
        classes.append("alert")
    if cell.missing:
        classes.append("missing")
        reason = _e(cell.reason)
        body = f'<span class="na">{_e(cell.text)}</span> <span class="reason">{reason}</span>'
        return f'<td class="{" ".join(classes)}" title="{reason}">{body}</td>'
    attr = f' class="{" ".join(classes)}"' if classes else ""
    return f"<td{attr}>{_e(cell.text)}</td>"


def render_table(table: TableData, wide: bool = False) -> str:
    """One table as an HTML card: heading, every row, and its note.

    Parameters
    ----------
    table : TableData
        The table's content.
    wide : bool, default False
        Span the whole width of the card grid.

    Returns
    -------
    str
        An HTML fragment.
    """
    numeric = [column.numeric for column in table.columns]
    head = "".join(
        f'<th{" class=num" if c.numeric else ""} scope="col">{_e(c.name)}</th>'
        for c in table.columns
    )
    body = "\n".join(
        "<tr>" + "".join(_td(cell, n) for cell, n in zip(row, numeric, strict=True)) + "</tr>"
        for row in table.rows
    )
    kind = "kv" if len(table.columns) == 2 else "grid"
    scroll = " tall" if len(table.rows) > SCROLL_ROWS else ""
    count = "" if kind == "kv" else f' <span class="count">{len(table.rows):,} rows</span>'
    note = f'<p class="note">{_e(table.note)}</p>' if table.note else ""
    card = "card wide" if wide else "card"
    return (
        f'<section class="{card}" id="table-{_slug(table.title)}">'
        f"<h3>{_e(table.title)}{count}</h3>"
        f'<div class="scroll{scroll}"><table class="{kind}">'
        f"<thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table></div>{note}</section>"
    )


def _cards(items: list[TableData | None], wide: Collection[str] = ()) -> str:
    shown = [render_table(t, wide=t.title in wide) for t in items if t is not None]
    return f'<div class="cards">{"".join(shown)}</div>' if shown else ""


# ---- header ---------------------------------------------------------------------------

#: Key figures of the header: (label, metrics key, formatter).
_KEY_FIGURES = (
    ("Events", "total_events", tables.count),
    ("Event rate", "event_rate_wall_khz", tables.number(2, " kHz")),
    ("Data rate", "overall_rate_gbps", tables.number(3, " Gbps")),
    ("Wall time", "wall_time", tables.format_time),
    ("Core efficiency", "core_efficiency", tables.fraction),
    ("Speedup", "speedup_factor", tables.number(2, "x")),
    ("Avg workers", "avg_workers", tables.number(2)),
    ("Peak memory", "peak_memory_bytes", tables.format_bytes),
)


#: A number and its unit, e.g. ``639.59 MiB``: the unit is set smaller.
_WITH_UNIT = re.compile(r"^([-+0-9.,]+) (\S+)$")


def _kpi_value(text: str) -> str:
    match = _WITH_UNIT.match(text)
    if match is None:
        return _e(text)
    return f'{_e(match.group(1))}<span class="unit">{_e(match.group(2))}</span>'


def _key_figures(metrics: Mapping[str, Any]) -> str:
    out = []
    for label, key, fmt in _KEY_FIGURES:
        cell = tables.value_cell(metrics, key, fmt)
        if cell.missing:
            value = f'<span class="na">{_e(cell.text)}</span>'
            value += f'<span class="reason">{_e(cell.reason)}</span>'
            attr = f' class="kpi missing" title="{_e(cell.reason)}"'
        else:
            value, attr = _kpi_value(cell.text), ' class="kpi"'
        out.append(
            f'<div{attr}><div class="label">{_e(label)}</div><div class="value">{value}</div></div>'
        )
    return f'<div class="kpis">{"".join(out)}</div>'


def _alerts(metrics: Mapping[str, Any]) -> list[str]:
    """Bad news worth a banner: failures, losses, dropped monitoring data."""
    found = []
    failed = metrics.get("num_failed_chunks")
    if tables.is_number(failed) and failed > 0:
        found.append(f"{int(failed):,} chunk(s) failed (see Failed Chunks)")
    for key, what in (
        ("lost_workers", "worker(s) died during the run"),
        ("restarted_workers", "of them restarted"),
        ("unmonitored_workers", "worker(s) computed unmonitored (could not load roastcoffea)"),
    ):
        workers = metrics.get(key)
        if isinstance(workers, list) and workers:
            found.append(f"{len(workers):,} {what}")
    monitoring = metrics.get("monitoring")
    if isinstance(monitoring, Mapping):
        for key, what in (
            ("dropped_events", "transition events dropped by the monitor"),
            ("records_dropped", "instrumentation records dropped"),
            ("hook_errors", "errors in the scheduler hooks"),
            ("payload_errors", "worker payloads rejected"),
            ("prefixes_folded", "task prefixes folded into '(other prefixes)' (string table full)"),
        ):
            value = monitoring.get(key)
            if tables.is_number(value) and value > 0:
                found.append(f"{int(value):,} {what}")
        found += [f"collector: {m}" for m in monitoring.get("collector_errors") or ()]
    return found


def _utc(t: Any) -> str | None:
    if not tables.is_number(t):
        return None
    return datetime.fromtimestamp(float(t), tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _when(metadata: Mapping[str, Any], t0: float | None, t1: float | None) -> dict[str, Cell]:
    """Start, end and duration of the run, from the times given or the metadata."""
    t0 = t0 if t0 is not None else metadata.get("t0")
    t1 = t1 if t1 is not None else metadata.get("t1")
    # roastcoffea 0.1.2 wrote perf_counter values, not wall-clock times.
    wall_clock = metadata.get("format") != LEGACY_FORMAT
    start = _utc(t0) if wall_clock else None
    end = _utc(t1) if wall_clock else None
    reason = "not a wall-clock time (roastcoffea 0.1.2)" if not wall_clock else "not given"
    duration = None
    if tables.is_number(t0) and tables.is_number(t1):
        duration = float(t1) - float(t0)
    return {
        "Start": Cell(start) if start else tables.missing(reason),
        "End": Cell(end) if end else tables.missing(reason),
        "Duration": tables.show(duration, tables.format_time, "start or end not given"),
    }


def _header(
    metrics: Mapping[str, Any],
    metadata: Mapping[str, Any],
    title: str,
    when: dict[str, Cell],
) -> str:
    name = metadata.get("name")
    facts = {"Measurement": Cell(str(name)) if name else tables.missing("not saved"), **when}
    items = []
    for label, cell in facts.items():
        text = f"{cell.text} ({cell.reason})" if cell.missing else cell.text
        items.append(f"<div><dt>{_e(label)}</dt><dd>{_e(text)}</dd></div>")
    alerts = _alerts(metrics)
    banner = ""
    if alerts:
        lines = "".join(f"<li>{_e(a)}</li>" for a in alerts)
        banner = (
            f'<div class="alerts" role="alert"><strong>Attention</strong><ul>{lines}</ul></div>'
        )
    return (
        f'<header class="top"><div class="wrap"><p class="kicker">roastcoffea performance report'
        f"</p><h1>{_e(title)}</h1><dl class=facts>{''.join(items)}</dl></div></header>"
        f'<div class="wrap">{_key_figures(metrics)}{banner}</div>'
    )


# ---- figures --------------------------------------------------------------------------


def _png_size(png: bytes) -> tuple[int, int]:
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def _figure(entry: Any, metrics: Mapping[str, Any]) -> str:
    """One figure card; a figure that fails to draw shows its error instead."""
    try:
        fig, _ = entry.draw(metrics)
        width, height = fig.get_size_inches()
        fig.set_size_inches(FIGURE_WIDTH, FIGURE_WIDTH * height / width)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=FIGURE_DPI)
    except Exception as exc:  # one broken figure must not cost the whole report
        logger.warning("roastcoffea report: figure %s failed", entry.name, exc_info=True)
        return (
            f'<figure class="card figure failed" id="figure-{_e(entry.name)}">'
            f'<p class="figure-error">{_e(type(exc).__name__)}: {_e(exc)}</p>'
            f"<figcaption>{_e(entry.title)}</figcaption></figure>"
        )
    png = buffer.getvalue()
    width, height = _png_size(png)
    data = base64.b64encode(png).decode("ascii")
    return (
        f'<figure class="card figure" id="figure-{_e(entry.name)}">'
        f'<img src="data:image/png;base64,{data}" alt="{_e(entry.title)}" '
        f'width="{width}" height="{height}">'
        f"<figcaption>{_e(entry.title)}</figcaption></figure>"
    )


def _figures(metrics: Mapping[str, Any]) -> str:
    if importlib.util.find_spec("matplotlib") is None:
        return '<p class="empty">No figures: matplotlib is not installed.</p>'
    from roastcoffea.plots.catalog import applicable_plots

    entries = applicable_plots(metrics)
    if not entries:
        return '<p class="empty">No figure applies: the measurement has no data to plot.</p>'
    return f'<div class="figures">{"".join(_figure(e, metrics) for e in entries)}</div>'


# ---- the page -------------------------------------------------------------------------

#: Sections of the page: (anchor, heading).
SECTIONS = (
    ("summary", "Summary"),
    ("fine-metrics", "Fine Metrics"),
    ("figures", "Figures"),
    ("chunks", "Chunks"),
    ("metadata", "Run Metadata"),
    ("monitoring", "Monitoring"),
)


def _section(anchor: str, heading: str, body: str, intro: str = "") -> str:
    lead = f'<p class="intro">{_e(intro)}</p>' if intro else ""
    return f'<section class="block" id="{anchor}"><h2>{_e(heading)}</h2>{lead}{body}</section>'


def _metadata_body(metadata: Mapping[str, Any]) -> str:
    if not metadata:
        return (
            '<p class="empty">No run metadata given: save the measurement '
            "(or use MetricsCollector.save_report) to record versions and the cluster shape.</p>"
        )
    return _cards(tables.metadata_tables(metadata))


#: Breakdown tables that take the whole width of the page.
WIDE_TABLES = frozenset(
    {
        tables.PREFIX_TABLE_TITLE,
        tables.WORKER_TABLE_TITLE,
        tables.FAILED_CHUNKS_TITLE,
        tables.SECTIONS_TITLE,
    }
)


def _body(metrics: Mapping[str, Any], metadata: Mapping[str, Any]) -> str:
    summary = _cards(
        [
            tables.throughput_table(metrics),
            tables.event_processing_table(metrics),
            tables.resources_table(metrics),
            tables.timing_table(metrics),
        ]
    )
    fine = _cards(
        [
            tables.fine_metrics_table(metrics),
            tables.prefix_table(metrics),
            tables.worker_table(metrics),
        ],
        WIDE_TABLES,
    )
    chunks = _cards(
        [
            tables.chunk_table(metrics),
            tables.dataset_table(metrics),
            tables.failed_chunks_table(metrics),
            tables.sections_table(metrics),
        ],
        WIDE_TABLES,
    )
    monitoring = _cards([tables.monitoring_table(metrics), tables.unavailable_table(metrics)])
    return "".join(
        (
            _section("summary", "Summary", summary),
            _section(
                "fine-metrics",
                "Fine Metrics",
                fine,
                "Thread time of the run's Dask span, from Dask's fine performance metrics: "
                "processor tasks vs overhead, per task prefix and per worker.",
            ),
            _section("figures", "Figures", _figures(metrics)),
            _section("chunks", "Chunks", chunks),
            _section("metadata", "Run Metadata", _metadata_body(metadata)),
            _section(
                "monitoring",
                "Monitoring",
                monitoring,
                "What roastcoffea's own monitoring cost, and whether it lost anything.",
            ),
        )
    )


def _roastcoffea_version() -> str:
    try:
        return version("roastcoffea")
    except PackageNotFoundError:
        return "unknown version"


def render_report(
    metrics: Mapping[str, Any],
    metadata: Mapping[str, Any] | None = None,
    t0: float | None = None,
    t1: float | None = None,
    title: str | None = None,
) -> str:
    """The HTML report of a metrics dictionary, as one self-contained page.

    Parameters
    ----------
    metrics : dict
        A metrics dictionary, live (``MetricsCollector.get_metrics()``) or
        loaded (``load_measurement``).
    metadata : dict, optional
        The measurement's ``metadata.json`` (``load_metadata``): its name,
        times, software versions and cluster shape are shown.
    t0, t1 : float, optional
        Wall-clock start and end (epoch seconds); default the metadata's.
    title : str, optional
        Page title; default ``"roastcoffea report: <name>"``.

    Returns
    -------
    str
        The HTML text.
    """
    metadata = metadata or {}
    name = metadata.get("name")
    if title is None:
        title = f"roastcoffea report: {name}" if name else "roastcoffea report"
    when = _when(metadata, t0, t1)
    nav = "".join(f'<a href="#{anchor}">{_e(label)}</a>' for anchor, label in SECTIONS)
    made = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="generator" content="roastcoffea {_e(_roastcoffea_version())}">'
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body>"
        f'<nav class="bar"><div class="wrap"><span class="brand">roastcoffea</span>{nav}'
        "</div></nav>"
        f"{_header(metrics, metadata, title, when)}"
        f'<main class="wrap">{_body(metrics, metadata)}</main>'
        f'<footer class="wrap">Made by roastcoffea {_e(_roastcoffea_version())} on {made}.'
        "</footer></body></html>\n"
    )


def write_report(
    path: str | os.PathLike[str],
    metrics: Mapping[str, Any],
    metadata: Mapping[str, Any] | None = None,
    t0: float | None = None,
    t1: float | None = None,
    title: str | None = None,
) -> Path:
    """Write :func:`render_report` to ``path`` (parent directories created).

    The file is written through a temporary file next to it, so a failure
    leaves no half report.

    Parameters
    ----------
    path : path-like
        The HTML file.
    metrics, metadata, t0, t1, title
        As :func:`render_report`.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    OSError
        When the file cannot be written.
    """
    path = Path(path)
    text = render_report(metrics, metadata, t0, t1, title)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


CSS = """
:root {
  --bg: #f6f3ef; --card: #ffffff; --ink: #2a211b; --muted: #7b6b5f; --line: #e9e2da;
  --zebra: #fbf8f5; --hover: #f3ece4; --accent: #b8642a; --roast: #3b2719; --roast2: #6e4529;
  --alert: #b42318; --alert-bg: #fef3f2; --alert-line: #fecdca;
  --mono: ui-monospace, "SFMono-Regular", "DejaVu Sans Mono", Menlo, Consolas, monospace;
}
* { box-sizing: border-box; }
html { scroll-behavior: smooth; }
body {
  margin: 0; background: var(--bg); color: var(--ink); line-height: 1.45;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
    "Noto Sans", "DejaVu Sans", sans-serif;
  -webkit-font-smoothing: antialiased;
}
.wrap { max-width: 1440px; margin: 0 auto; padding: 0 28px; }
nav.bar {
  position: sticky; top: 0; z-index: 10; background: rgba(59, 39, 25, 0.96);
  border-bottom: 1px solid rgba(255, 255, 255, 0.08);
}
nav.bar .wrap { display: flex; gap: 4px; align-items: center; overflow-x: auto; height: 44px; }
nav.bar .brand { color: #f3d9bf; font-weight: 700; margin-right: 16px; letter-spacing: .02em; }
nav.bar a {
  color: #e9dccf; text-decoration: none; font-size: 13px; padding: 6px 10px; border-radius: 6px;
  white-space: nowrap;
}
nav.bar a:hover { background: rgba(255, 255, 255, 0.1); color: #fff; }
header.top {
  background: linear-gradient(135deg, var(--roast) 0%, var(--roast2) 100%); color: #fff;
  padding: 30px 0 70px;
}
.kicker {
  margin: 0 0 6px; text-transform: uppercase; letter-spacing: .14em; font-size: 12px;
  color: #f0c9a3;
}
header h1 { margin: 0 0 18px; font-size: 30px; font-weight: 700; letter-spacing: -.01em; }
dl.facts { display: flex; flex-wrap: wrap; gap: 10px 36px; margin: 0; }
dl.facts dt {
  font-size: 11px; text-transform: uppercase; letter-spacing: .1em; color: #e2c3a6;
}
dl.facts dd { margin: 2px 0 0; font-size: 15px; font-variant-numeric: tabular-nums; }
.kpis {
  display: grid; grid-template-columns: repeat(auto-fit, minmax(128px, 1fr)); gap: 12px;
  margin-top: -44px;
}
.kpi {
  background: var(--card); border-radius: 12px; padding: 14px 16px; border: 1px solid var(--line);
  box-shadow: 0 4px 14px rgba(59, 39, 25, 0.08);
}
.kpi .label {
  font-size: 11px; text-transform: uppercase; letter-spacing: .08em; color: var(--muted);
}
.kpi .value {
  font-size: 22px; font-weight: 650; margin-top: 4px; font-variant-numeric: tabular-nums;
}
.kpi .unit {
  font-size: 13px; font-weight: 500; color: var(--muted); margin-left: 4px; white-space: nowrap;
}
.kpi.missing .value { font-size: 18px; white-space: normal; }
.kpi .reason { display: block; font-size: 11px; font-weight: 400; color: var(--muted); }
.alerts {
  margin-top: 18px; background: var(--alert-bg); border: 1px solid var(--alert-line);
  color: var(--alert); border-radius: 10px; padding: 12px 18px;
}
.alerts ul { margin: 6px 0 0; padding-left: 20px; }
section.block { margin-top: 40px; }
section.block > h2 {
  font-size: 20px; margin: 0 0 14px; padding-bottom: 8px; border-bottom: 2px solid var(--line);
  display: flex; align-items: center; gap: 10px;
}
section.block > h2::before {
  content: ""; width: 6px; height: 20px; border-radius: 3px; background: var(--accent);
}
.intro { margin: -4px 0 14px; color: var(--muted); font-size: 14px; }
.cards {
  display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 440px), 1fr));
  gap: 18px; align-items: start;
}
.card {
  background: var(--card); border: 1px solid var(--line); border-radius: 12px;
  box-shadow: 0 1px 3px rgba(59, 39, 25, 0.06); overflow: hidden; margin: 0;
}
.card.wide { grid-column: 1 / -1; }
.card h3 {
  margin: 0; padding: 12px 16px; font-size: 14px; font-weight: 650; background: #fcfaf7;
  border-bottom: 1px solid var(--line); display: flex; justify-content: space-between;
  align-items: baseline; gap: 12px;
}
.card h3 .count { font-weight: 400; color: var(--muted); font-size: 12px; }
.scroll { overflow-x: auto; }
.scroll.tall { max-height: 640px; overflow-y: auto; }
table { width: 100%; border-collapse: collapse; font-size: 13.5px; }
th {
  position: sticky; top: 0; background: #f7f2ec; color: var(--muted); text-align: left;
  font-size: 11px; text-transform: uppercase; letter-spacing: .06em; font-weight: 600;
  padding: 8px 14px; border-bottom: 1px solid var(--line); white-space: nowrap;
}
td { padding: 7px 14px; border-bottom: 1px solid #f1ece6; vertical-align: top; }
tbody tr:nth-child(even) td { background: var(--zebra); }
tbody tr:hover td { background: var(--hover); }
tbody tr:last-child td { border-bottom: 0; }
.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.kv td:first-child { color: #4a3b30; }
table.grid td:first-child { font-family: var(--mono); font-size: 12.5px; }
td.indent-1 { padding-left: 34px; color: var(--muted) !important; }
td.indent-2 { padding-left: 54px; color: var(--muted) !important; }
td.indent-3 { padding-left: 74px; color: var(--muted) !important; }
td.alert { color: var(--alert); font-weight: 600; }
td.missing { cursor: help; white-space: normal; }
.na {
  display: inline-block; font-size: 11px; font-weight: 700; letter-spacing: .04em;
  color: #8a6d57; background: #f3e8dd; border-radius: 4px; padding: 0 5px;
}
td .reason { color: var(--muted); font-size: 12px; font-style: italic; }
.note { margin: 0; padding: 8px 16px; font-size: 12.5px; color: var(--muted);
  border-top: 1px solid var(--line); }
.figures {
  display: grid; grid-template-columns: repeat(auto-fill, minmax(min(100%, 540px), 1fr));
  gap: 18px; align-items: start;
}
.figure { padding: 12px 12px 0; }
.figure img { display: block; width: 100%; height: auto; }
.figure figcaption { padding: 6px 4px 10px; font-size: 12px; color: var(--muted); }
.figure-error {
  color: var(--alert); background: var(--alert-bg); padding: 16px; border-radius: 8px;
  font-family: var(--mono); font-size: 12.5px; margin: 0;
}
.empty {
  color: var(--muted); background: var(--card); border: 1px dashed var(--line);
  border-radius: 12px; padding: 18px;
}
footer { color: var(--muted); font-size: 12px; padding: 40px 28px 30px; }
@media (max-width: 640px) {
  .wrap { padding: 0 14px; }
  header h1 { font-size: 22px; }
  .kpi .value { font-size: 18px; }
}
@media print {
  nav.bar { display: none; }
  body { background: #fff; }
  header.top { padding-bottom: 20px; }
  .kpis { margin-top: 12px; }
  .scroll.tall { max-height: none; overflow: visible; }
  .card, .kpi { box-shadow: none; break-inside: avoid; }
  th { position: static; }
}
"""
