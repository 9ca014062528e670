"""A roastcoffea page on the scheduler's dashboard: ``<dashboard>/roastcoffea``.

Served by the scheduler plugin from the scheduler's own HTTP server, so every
user of a cluster started with roastcoffea preloaded finds it next to Dask's
pages. The page (``dashboard.html``, no network needed) reads
``/roastcoffea/data.json`` every second, as Dask's pages refresh, and shows:

- events/s and MiB/s of the chunks (over the last ten seconds, from the
  cumulative totals) and the totals since the plugin started;
- processor against overhead thread time, from the fine-metrics digests: a
  prefix is the processor's when its tasks carry phase digests;
- the processor phases per worker and per run from the aggregator's digest
  table, per dataset from the running totals (a task's digests come with the
  dataset of its work item), and, per dataset, chunks, events, bytes and mean
  chunk duration, from the running totals
  (:mod:`roastcoffea.plugin.scheduler.totals`: the scheduler decodes no record).

Cumulative since the plugin started, for every run on the cluster, as the
Prometheus series are; and per run (a collector's span, the latest
:data:`~roastcoffea.plugin.scheduler.totals.MAX_RUNS`): its chunks, events, bytes,
phases, its events over time (:mod:`~roastcoffea.plugin.scheduler.rate_series`, drawn as
a line of its event rate) and, once its block has ended, its event rate over the block's
wall time (the collector's ``event_rate_wall_khz``: the collector sends its wall time at
its exit), and whether Dask says its span is done, so each running collector has its own
row, under the name the collector gave its span (``MetricsCollector(name=...)``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from importlib.resources import files
from time import time
from typing import Any

from tornado import web

import roastcoffea.phase_vocabulary as vocab
from roastcoffea.plugin.dask_versions import spans_extension
from roastcoffea.plugin.scheduler.totals import RunningTotals, RunTally
from roastcoffea.plugin.scheduler.workers import worker_values

PAGE_ROUTE = r"/roastcoffea/?"
DATA_ROUTE = r"/roastcoffea/data\.json"
#: The page's entry in the navigation bar of Dask's Bokeh pages (a link relative to them).
NAV_PAGE = "roastcoffea"

#: Whose thread time: the processor's tasks, or the rest (Dask's overhead).
ROLES = ("processor", "overhead")
#: The thread time activities, by what they say of the processor's time.
_SPLIT = {"thread-cpu": "cpu", "thread-noncpu": "noncpu"}


class DashboardData:
    """What the page shows, read from a running plugin at each request.

    Parameters
    ----------
    plugin : RoastPlugin
        Its aggregator and scheduler are read at each request.
    totals : RunningTotals
        The plugin's running totals of the chunks, per dataset and per run.
    """

    def __init__(self, plugin: Any, totals: RunningTotals) -> None:
        self.plugin = plugin
        self.totals = totals
        self.started = time()

    def snapshot(self) -> dict[str, Any]:
        """The page's data now (JSON-able)."""
        aggregator = self.plugin.aggregator
        aggregator.drain()
        by_prefix = aggregator.digest_totals("execute", "prefix")
        processor = {p for (p, a, _) in by_prefix if a == vocab.TASKS_ACTIVITY}
        split = {role: dict.fromkeys(("cpu", "noncpu", "other"), 0.0) for role in ROLES}
        for (prefix, activity, unit), value in by_prefix.items():
            if unit == "seconds":
                role = "processor" if prefix in processor else "overhead"
                split[role][_SPLIT.get(activity, "other")] += value
        per_worker = _phase_walls(aggregator.digest_totals("execute", "worker"))
        per_span = _phase_walls(aggregator.digest_totals("execute", "span"))
        workers = {}
        for address, ws in list(self.plugin.scheduler.workers.items()):
            values = worker_values(ws)
            workers[address] = {"memory": values[0], "cpu": values[7]}
        totals = self.totals
        datasets = {
            name: {
                "chunks": tally.chunks,
                "events": tally.events,
                "bytes": tally.bytes_read,
                "seconds": tally.seconds,
            }
            for name, tally in sorted(totals.datasets.items())
        }
        return {
            "time": time(),
            "started": self.started,
            "chunks": totals.all.chunks,
            "events": totals.all.events,
            "bytes": totals.all.bytes_read,
            "datasets": datasets,
            "processor_prefixes": sorted(processor),
            "thread_seconds": split,
            "phases": list(vocab.PHASES),
            "phases_per_worker": per_worker,
            "phases_per_dataset": {d: dict(p) for d, p in sorted(totals.dataset_phases.items())},
            "runs": [
                self._run_row(span, run, per_span.get(span, {}))
                for span, run in reversed(totals.runs.items())
            ],
            "workers": workers,
        }

    def _run_row(self, span: str, run: RunTally, phases: dict[str, float]) -> dict[str, Any]:
        """A run's totals, with its span's name and whether Dask says it is done."""
        found = getattr(spans_extension(self.plugin.scheduler), "spans", {}).get(span)
        name = "/".join(found.name) if found is not None else "(span gone)"
        done = bool(found.done) if found is not None else None
        return {
            "span": span,
            "name": name,
            "done": done,
            "first": run.first,
            "last": run.last,
            "chunks": run.chunks,
            "events": run.events,
            "bytes": run.bytes_read,
            "wall_time": run.wall_time,
            "phases": phases,
            "rate": run.rate.as_dict(),
        }


def _phase_walls(digests: dict[tuple[str, str, str], float]) -> dict[str, dict[str, float]]:
    """``{worker or span: {phase: wall seconds}}`` of the aggregator's digest totals."""
    walls: dict[str, dict[str, float]] = defaultdict(dict)
    for (of, activity, unit), value in digests.items():
        phase = vocab.PHASE_OF_ACTIVITY.get(activity)
        if phase is not None and unit == vocab.WALL:
            walls[of][phase] = value
    return dict(walls)


#: Attribute of the scheduler's HTTP application holding the running plugin's data.
_CURRENT = "roastcoffea_dashboard"


class _PluginHandler(web.RequestHandler):
    def running(self) -> DashboardData | None:
        """The running plugin's data; None, and a 404 saying so, when none runs."""
        data = getattr(self.application, _CURRENT, None)
        if data is not None:
            return data
        self.set_status(404)
        self.write("roastcoffea: the plugin is not running on this scheduler")
        return None


class PageHandler(_PluginHandler):
    def get(self) -> None:
        if self.running() is not None:
            self.set_header("Content-Type", "text/html; charset=utf-8")
            self.write(files(__package__).joinpath("dashboard.html").read_text(encoding="utf-8"))


class DataHandler(_PluginHandler):
    def get(self) -> None:
        data = self.running()
        if data is None:
            return
        try:
            body = json.dumps(data.snapshot(), allow_nan=False)
        except Exception:
            data.plugin.count_error("dashboard")
            self.set_status(500)
            self.write("roastcoffea: the dashboard's data failed (counted in monitoring errors)")
            return
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "no-store")
        self.write(body)


def serve(scheduler: Any, data: DashboardData) -> bool:
    """Show ``data`` on the scheduler's HTTP server; False when it has none.

    The routes are added once per server; a plugin registered again takes
    the page over.
    """
    application = getattr(scheduler, "http_application", None)
    if application is None:
        return False
    if not hasattr(application, _CURRENT):
        application.add_handlers(r".*$", [(DATA_ROUTE, DataHandler), (PAGE_ROUTE, PageHandler)])
        list_in_navigation(scheduler)
    setattr(application, _CURRENT, data)
    return True


def list_in_navigation(scheduler: Any) -> bool:
    """Add the page to the navigation bar of Dask's Bokeh pages; False without Bokeh.

    Dask's pages render the ``pages`` of the template variables it keeps per scheduler
    (one list, shared by every page), so the link shows on every page drawn after this.
    """
    try:
        from distributed.dashboard.scheduler import template_variables
    except ImportError:  # no Bokeh: Dask draws no pages to list this one on
        return False
    pages = template_variables(scheduler)["pages"]
    if NAV_PAGE not in pages:
        pages.append(NAV_PAGE)
    return True


def page_url(scheduler: Any) -> str | None:
    """The page's address, as Dask's dashboard link writes it; None without a dashboard."""
    from distributed.comm import get_address_host
    from distributed.utils import format_dashboard_link

    service = getattr(scheduler, "services", {}).get("dashboard")
    if service is None:
        return None
    try:
        link = format_dashboard_link(get_address_host(scheduler.address), service.port)
    except (KeyError, ValueError):  # a link template naming an unset variable
        return None
    return link.rsplit("/", 1)[0] + "/" + NAV_PAGE


def unserve(scheduler: Any, data: DashboardData) -> None:
    """Stop showing ``data`` (the page then says the plugin is not running)."""
    application = getattr(scheduler, "http_application", None)
    if getattr(application, _CURRENT, None) is data:
        setattr(application, _CURRENT, None)
