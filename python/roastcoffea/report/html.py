"""The HTML report of a measurement: one self-contained file.

Rendered from the Jinja2 template ``templates/report.html.j2`` with autoescape
(every value is plain text), the style sheet ``templates/report.css`` inlined.
Everything is inline: the style sheet, and every figure as a
``data:image/png;base64,`` image drawn by
:func:`roastcoffea.plots.catalog.applicable_plots`. The page has no script and
names no external address, so it opens offline, from a mail attachment or a CI
artifact, and prints. Tables come from :mod:`roastcoffea.report.tables`, and
every row is written (long tables scroll in their box, and print in full). A
value that could not be measured shows ``N/A`` with its reason, visible and as
a tooltip.

The page opens with the answer (:mod:`roastcoffea.report.answer`): the headline
in the header, then what to change (the top findings, the largest wall time at
stake first), alerts and the key figures. Then the sections, in order: summary
tables, findings, phases, fine metrics, figures, chunks (chunk, dataset and
section statistics), run metadata, monitoring overhead.
"""

from __future__ import annotations

import base64
import importlib.util
import io
import logging
import os
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from datetime import datetime, timezone
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from importlib.resources import files
from pathlib import Path
from typing import Any

import jinja2

from roastcoffea.compat_0_1_2.names import LEGACY_FORMAT
from roastcoffea.report import tables
from roastcoffea.report.answer import answer, shortfall
from roastcoffea.report.tables import cells
from roastcoffea.report.tables.cells import Cell, TableData
from roastcoffea.units import format_bytes, format_gbps, format_time

logger = logging.getLogger(__name__)

#: ``on_figure(done, total)``: told after each figure is drawn.
FigureProgress = Callable[[int, int], None]

#: Resolution of the embedded figures: sharp at their displayed size, files stay small.
FIGURE_DPI = 120
#: Width of the embedded figures in inches: two figures side by side keep readable text.
FIGURE_WIDTH = 8.0
#: Rows of a table shown before its box scrolls (on screen; print shows all).
SCROLL_ROWS = 25


def _text(name: str) -> str:
    return (files("roastcoffea.report") / "templates" / name).read_text(encoding="utf-8")


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FunctionLoader(_text), autoescape=True, undefined=jinja2.StrictUndefined
    )


def _template(name: str = "report.html.j2") -> jinja2.Template:
    return _environment().get_template(name)


@cache
def _css(name: str = "report.css") -> str:
    return _text(name)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


# ---- tables ---------------------------------------------------------------------------


def _cell(cell: Cell, numeric: bool) -> dict[str, Any]:
    classes = ["num"] if numeric else []
    if cell.indent:
        classes.append(f"indent-{min(cell.indent, 3)}")
    if cell.alert:
        classes.append("alert")
    if cell.missing:
        classes.append("missing")
    return {
        "text": cell.text,
        "classes": " ".join(classes),
        "missing": cell.missing,
        "reason": cell.reason,
    }


def _table(table: TableData, wide: bool) -> dict[str, Any]:
    """What the template's table card shows of one table: every row, and its note."""
    numeric = [column.numeric for column in table.columns]
    return {
        "title": table.title,
        "slug": _slug(table.title),
        "kind": "kv" if len(table.columns) == 2 else "grid",
        "tall": len(table.rows) > SCROLL_ROWS,
        "wide": wide,
        "columns": table.columns,
        "rows": [[_cell(c, n) for c, n in zip(row, numeric, strict=True)] for row in table.rows],
        "note": table.note,
    }


def _tables(items: Iterable[TableData | None], wide: Collection[str] = ()) -> list[dict[str, Any]]:
    cards = [_table(t, t.title in wide) for t in items if t is not None]
    _fill_rows(cards)
    return cards


def _fill_rows(cards: list[dict[str, Any]]) -> None:
    """Make a card that would sit alone on its row of two wide, so no half row stays empty."""
    column = 0
    for i, card in enumerate(cards):
        if card["wide"]:
            column = 0
            continue
        alone = i + 1 == len(cards) or cards[i + 1]["wide"]
        if column == 0 and alone:
            card["wide"] = True
        else:
            column = 1 - column


# ---- header ---------------------------------------------------------------------------

#: Key figures of the header: (label, metrics key, formatter).
_KEY_FIGURES = (
    ("Events", "total_events", cells.count),
    ("Event rate", "event_rate_wall_khz", cells.khz),
    ("Data rate", "overall_rate_gbps", format_gbps),
    ("Wall time", "wall_time", format_time),
    ("Core efficiency", "core_efficiency", cells.fraction),
    ("Speedup", "speedup_factor", cells.number(2, "x")),
    ("Avg workers", "avg_workers", cells.number(2)),
    ("Peak memory", "peak_memory_bytes", format_bytes),
)


#: A number and its unit, e.g. ``639.59 MiB``: the unit is set smaller.
_WITH_UNIT = re.compile(r"^([-+0-9.,]+) (\S+)$")


def _kpis(metrics: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for label, key, fmt in _KEY_FIGURES:
        cell = cells.value_cell(metrics, key, fmt)
        kpi = {"label": label, "missing": cell.missing, "text": cell.text, "reason": cell.reason}
        match = _WITH_UNIT.match(cell.text)
        kpi["number"], kpi["unit"] = match.groups() if match else (cell.text, "")
        out.append(kpi)
    return out


def _alerts(metrics: Mapping[str, Any]) -> list[str]:
    """Bad news worth a banner: failures, losses, dropped monitoring data."""
    found = []
    failed = metrics.get("num_failed_chunks")
    if cells.is_number(failed) and failed > 0:
        found.append(f"{int(failed):,} chunk(s) failed (see Failed Chunks)")
    missing = shortfall(metrics)
    if missing is not None:
        found.append(missing)
    for key, what in (
        ("lost_workers", "worker(s) died during the run"),
        ("restarted_workers", "of them restarted"),
        ("unmonitored_workers", "worker(s) computed unmonitored (roastcoffea not loaded there)"),
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
            if cells.is_number(value) and value > 0:
                found.append(f"{int(value):,} {what}")
        found += [f"collector: {m}" for m in monitoring.get("collector_errors") or ()]
    return found


def _utc(t: Any) -> str | None:
    if not cells.is_number(t):
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
    if cells.is_number(t0) and cells.is_number(t1):
        duration = float(t1) - float(t0)
    return {
        "Start": Cell(start) if start else cells.missing(reason),
        "End": Cell(end) if end else cells.missing(reason),
        "Duration": cells.show(duration, format_time, "start or end not given"),
    }


def _facts(metadata: Mapping[str, Any], when: dict[str, Cell]) -> list[tuple[str, str]]:
    name = metadata.get("name")
    facts = {"Measurement": Cell(str(name)) if name else cells.missing("not saved"), **when}
    return [
        (label, f"{cell.text} ({cell.reason})" if cell.missing else cell.text)
        for label, cell in facts.items()
    ]


# ---- figures --------------------------------------------------------------------------


def _png_size(png: bytes) -> tuple[int, int]:
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def _figure(entry: Any, metrics: Mapping[str, Any]) -> dict[str, Any]:
    """One figure as PNG data; a figure that fails to draw carries its error instead."""
    shown: dict[str, Any] = {"name": entry.name, "title": entry.title, "error": None}
    try:
        fig, _ = entry.draw(metrics)
        width, height = fig.get_size_inches()
        fig.set_size_inches(FIGURE_WIDTH, FIGURE_WIDTH * height / width)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=FIGURE_DPI)
    except Exception as exc:  # one broken figure must not cost the whole report
        logger.warning(
            "roastcoffea report: figure %s failed: %s: %s", entry.name, type(exc).__name__, exc
        )
        logger.debug("roastcoffea report: figure %s failed", entry.name, exc_info=True)
        shown["error"] = f"{type(exc).__name__}: {exc}"
        return shown
    png = buffer.getvalue()
    shown["width"], shown["height"] = _png_size(png)
    shown["data"] = base64.b64encode(png).decode("ascii")
    return shown


def _figures(metrics: Mapping[str, Any], on_figure: FigureProgress | None) -> dict[str, Any]:
    if importlib.util.find_spec("matplotlib") is None:
        return {"empty": "No figures: matplotlib is not installed."}
    from roastcoffea.plots.catalog import applicable_plots

    entries = applicable_plots(metrics)
    if not entries:
        return {"empty": "No figure applies: the measurement has no data to plot."}
    figures = []
    for number, entry in enumerate(entries, 1):
        figures.append(_figure(entry, metrics))
        if on_figure is not None:
            on_figure(number, len(entries))
    return {"figures": figures}


# ---- the page -------------------------------------------------------------------------

#: Sections of the page: (anchor, heading).
SECTIONS = (
    ("summary", "Summary"),
    ("findings", "Findings"),
    ("phases", "Processor Phases"),
    ("fine-metrics", "Fine Metrics"),
    ("figures", "Figures"),
    ("chunks", "Chunks"),
    ("metadata", "Run Metadata"),
    ("monitoring", "Monitoring"),
)


#: Breakdown tables that take the whole width of the page.
WIDE_TABLES = frozenset(
    {
        tables.PREFIX_TABLE_TITLE,
        tables.WORKER_TABLE_TITLE,
        tables.FAILED_CHUNKS_TITLE,
        tables.SECTIONS_TITLE,
        tables.DIAGNOSIS_TITLE,
        tables.TAIL_TITLE,
        tables.READS_TITLE,
        tables.COST_TITLE,
        tables.HOT_LINES_TITLE,
    }
)


#: What each section says under its heading.
_INTROS = {
    "findings": "Why the run took as long as it did, and what typically helps: the "
    "diagnosis, where the wall time went (start-up, steady state, the tail, the finish), "
    "the chunks that held the tail, what one event costs, the hot lines of the user's code "
    "from Dask's own profiler, and the shape of the reads.",
    "phases": "Where the processor tasks' time went, split by the phase clock of the worker "
    "plugin: opening files, waiting for bytes, decompressing, building arrays, the user's "
    "code, compressing the output, and the rest. The phases of a task add up to its "
    "compute time.",
    "fine-metrics": "Thread time of the run's Dask span, from Dask's fine performance metrics: "
    "processor tasks vs overhead, per task prefix and per worker.",
    "monitoring": "What roastcoffea's own monitoring cost, and whether it lost anything.",
}


def _content(
    metrics: Mapping[str, Any], metadata: Mapping[str, Any], on_figure: FigureProgress | None
) -> dict[str, dict]:
    """Each section's tables, figures or empty-state text, by anchor."""
    metadata_content: dict[str, Any] = {"tables": _tables(tables.metadata_tables(metadata))}
    if not metadata:
        metadata_content = {
            "empty": "No run metadata given: save the measurement (or use "
            "MetricsCollector.save_report) to record versions and the cluster shape."
        }
    return {
        "summary": {
            "tables": _tables(
                [
                    tables.throughput_table(metrics),
                    tables.event_processing_table(metrics),
                    tables.resources_table(metrics),
                    tables.node_table(metrics),
                    tables.timing_table(metrics),
                ]
            )
        },
        "findings": _findings_content(metrics),
        "phases": _phases_content(metrics),
        "fine-metrics": {
            "tables": _tables(
                [
                    tables.fine_metrics_table(metrics),
                    tables.prefix_table(metrics),
                    tables.worker_table(metrics),
                ],
                WIDE_TABLES,
            )
        },
        "figures": _figures(metrics, on_figure),
        "chunks": {
            "tables": _tables(
                [
                    tables.chunk_table(metrics),
                    tables.dataset_table(metrics),
                    tables.failed_chunks_table(metrics),
                    tables.sections_table(metrics),
                ],
                WIDE_TABLES,
            )
        },
        "metadata": metadata_content,
        "monitoring": {
            "tables": _tables([tables.monitoring_table(metrics), tables.unavailable_table(metrics)])
        },
    }


def _findings_content(metrics: Mapping[str, Any]) -> dict[str, Any]:
    found = [
        tables.diagnosis_table(metrics),
        tables.wall_split_table(metrics),
        tables.tail_table(metrics),
        tables.cost_table(metrics),
        tables.hot_lines_table(metrics),
        tables.reads_table(metrics),
    ]
    if all(table is None for table in found):
        reason = metrics.get("unavailable", {}).get("wall_split", "not measured")
        return {"empty": f"No findings: {reason}."}
    return {"tables": _tables(found, WIDE_TABLES)}


def _phases_content(metrics: Mapping[str, Any]) -> dict[str, Any]:
    found = [
        tables.phases_table(metrics),
        tables.codecs_table(metrics),
    ]
    if all(table is None for table in found):
        reason = metrics.get("unavailable", {}).get("phase_wall_seconds", "not measured")
        return {"empty": f"No processor phases: {reason}."}
    return {"tables": _tables(found, WIDE_TABLES)}


def _roastcoffea_version() -> str:
    try:
        return version("roastcoffea")
    except PackageNotFoundError:
        return "unknown version"


def render_report(
    metrics: Mapping[str, Any],
    metadata: Mapping[str, Any] | None = None,
    *,
    t0: float | None = None,
    t1: float | None = None,
    title: str | None = None,
    on_figure: FigureProgress | None = None,
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
    on_figure : callable, optional
        Called as ``on_figure(done, total)`` after each figure is drawn (a
        progress bar: figures take most of the time of a large run's report).

    Returns
    -------
    str
        The HTML text.
    """
    metadata = metadata or {}
    name = metadata.get("name")
    if title is None:
        title = f"roastcoffea report: {name}" if name else "roastcoffea report"
    content = _content(metrics, metadata, on_figure)
    sections = [
        {"anchor": anchor, "heading": heading, "intro": _INTROS.get(anchor, "")}
        | {"tables": [], "figures": [], "empty": ""}
        | content[anchor]
        for anchor, heading in SECTIONS
    ]
    return (
        _template().render(
            title=title,
            version=_roastcoffea_version(),
            made=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
            css=_css(),
            sections=sections,
            facts=_facts(metadata, _when(metadata, t0, t1)),
            kpis=_kpis(metrics),
            answer=answer(metrics),
            alerts=_alerts(metrics),
        )
        + "\n"
    )


def render_summary(metrics: Mapping[str, Any], title: str = "roastcoffea") -> str:
    """The compact HTML summary a notebook shows: key figures, diagnosis, main tables.

    Styled under one class, so it changes nothing else on the notebook's page.

    Parameters
    ----------
    metrics : dict
        A metrics dictionary, live or loaded.
    title : str
        The line above the figures.

    Returns
    -------
    str
        An HTML fragment.
    """
    found = [
        tables.diagnosis_table(metrics),
        tables.throughput_table(metrics),
        tables.timing_table(metrics),
        tables.phases_table(metrics),
    ]
    return _template("summary.html.j2").render(
        title=title,
        css=_css("summary.css"),
        kpis=_kpis(metrics),
        alerts=_alerts(metrics),
        tables=_tables(found, {tables.DIAGNOSIS_TITLE}),
    )


def write_report(
    path: str | os.PathLike[str],
    metrics: Mapping[str, Any],
    metadata: Mapping[str, Any] | None = None,
    *,
    t0: float | None = None,
    t1: float | None = None,
    title: str | None = None,
    on_figure: FigureProgress | None = None,
) -> Path:
    """Write :func:`render_report` to ``path`` (parent directories created).

    The file is written through a temporary file next to it, so a failure
    leaves no half report.

    Parameters
    ----------
    path : path-like
        The HTML file.
    metrics, metadata, t0, t1, title, on_figure
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
    text = render_report(metrics, metadata, t0=t0, t1=t1, title=title, on_figure=on_figure)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path
