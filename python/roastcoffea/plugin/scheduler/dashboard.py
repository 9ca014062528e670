"""A roastcoffea page on the scheduler's dashboard: ``<dashboard>/roastcoffea``.

Served by the scheduler plugin from the scheduler's own HTTP server, so every
user of a cluster started with roastcoffea preloaded finds it next to Dask's
pages. The page (``dashboard.html``, no network needed) reads
``/roastcoffea/data.json`` every second, as Dask's pages refresh, and shows:

- events/s and MiB/s of the chunks (over the last ten seconds, from the
  cumulative totals) and the totals since the plugin started;
- processor against overhead thread time, from the fine-metrics digests: a
  prefix is the processor's when its tasks carry phase digests;
- the processor phases per worker and per dataset (wall seconds; a task's
  digests come with the dataset of its work item) and, per dataset, chunks,
  events, bytes and mean chunk duration, from the chunk totals the records
  arrive with (the scheduler decodes no record).

Cumulative since the plugin started, for every run on the cluster, as the
Prometheus series are; and per run (a collector's span, the latest
:data:`MAX_RUNS`): its chunks, events, bytes, phases and event rate (its events
over the time from its first record's arrival to its last's), and whether Dask
says its span is done, so each running collector has its own row.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from time import time
from typing import Any

from tornado import web

import roastcoffea.phase_vocabulary as vocab
from roastcoffea.plugin.dask_versions import spans_extension
from roastcoffea.plugin.scheduler.prometheus import ChunkTotals
from roastcoffea.plugin.scheduler.workers import worker_values

PAGE_ROUTE = r"/roastcoffea/?"
DATA_ROUTE = r"/roastcoffea/data\.json"

#: Whose thread time: the processor's tasks, or the rest (Dask's overhead).
ROLES = ("processor", "overhead")
#: The thread time activities, by what they say of the processor's time.
_SPLIT = {"thread-cpu": "cpu", "thread-noncpu": "noncpu"}


class DashboardData:
    """What the page shows, kept by a running plugin.

    Parameters
    ----------
    plugin : RoastPlugin
        Its aggregator and scheduler are read at each request.
    chunks : ChunkTotals
        The plugin's chunk totals per dataset, whose labels the phases per
        dataset share (bounded as the Prometheus series are).
    """

    def __init__(self, plugin: Any, chunks: ChunkTotals) -> None:
        self.plugin = plugin
        self.chunks = chunks
        self.started = time()
        self.dataset_phases: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        # Per run (its span), the latest MAX_RUNS: its totals, and when it was active.
        self.runs: dict[str, RunTotals] = {}

    def add_run_chunk(self, span: str, events: int, nbytes: int) -> None:
        """Count one chunk of the run of ``span`` (its dataset's totals are ``chunks``')."""
        run = self._run(span)
        run.chunks += 1
        run.events += events
        run.bytes += nbytes

    def add_phases(
        self,
        dataset: str | None,
        labels: Sequence[tuple[str, str]],
        values: Sequence[float],
        span: str | None = None,
    ) -> None:
        """Add one task's phase wall seconds (its digests) to its dataset's and run's."""
        walls = [
            (vocab.PHASE_OF_ACTIVITY[activity], value)
            for (activity, unit), value in zip(labels, values, strict=False)
            if unit == vocab.WALL and activity in vocab.PHASE_OF_ACTIVITY
        ]
        for totals in (
            None if dataset is None else self.dataset_phases[self.chunks.label(dataset)],
            None if span is None else self._run(span).phases,
        ):
            if totals is not None:
                for phase, value in walls:
                    totals[phase] += value

    def _run(self, span: str) -> RunTotals:
        """The totals of the run of ``span``, made active now; the oldest run beyond
        MAX_RUNS is dropped."""
        run = self.runs.pop(span, None) or RunTotals(first=time())
        run.last = time()
        self.runs[span] = run  # the most recently active last
        if len(self.runs) > MAX_RUNS:
            del self.runs[next(iter(self.runs))]
        return run

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
        phases: dict[str, dict[str, float]] = defaultdict(dict)
        for (worker, activity, unit), value in aggregator.digest_totals(
            "execute", "worker"
        ).items():
            phase = vocab.PHASE_OF_ACTIVITY.get(activity)
            if phase is not None and unit == vocab.WALL:
                phases[worker][phase] = value
        workers = {}
        for address, ws in list(self.plugin.scheduler.workers.items()):
            values = worker_values(ws)
            workers[address] = {"memory": values[0], "cpu": values[7]}
        c = self.chunks
        datasets = {
            name: {
                "chunks": c.chunks[name],
                "events": c.events[name],
                "bytes": c.bytes_read[name],
                "seconds": c.seconds[name],
            }
            for name in sorted(c.chunks)
        }
        return {
            "time": time(),
            "started": self.started,
            "chunks": sum(d["chunks"] for d in datasets.values()),
            "events": sum(d["events"] for d in datasets.values()),
            "bytes": sum(d["bytes"] for d in datasets.values()),
            "datasets": datasets,
            "processor_prefixes": sorted(processor),
            "thread_seconds": split,
            "phases": list(vocab.PHASES),
            "phases_per_worker": dict(phases),
            "phases_per_dataset": {d: dict(p) for d, p in sorted(self.dataset_phases.items())},
            "runs": [self._run_row(span, run) for span, run in reversed(self.runs.items())],
            "workers": workers,
        }

    def _run_row(self, span: str, run: RunTotals) -> dict[str, Any]:
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
            "bytes": run.bytes,
            "phases": dict(run.phases),
        }


#: Runs the page keeps totals of (the most recently active ones).
MAX_RUNS = 20


@dataclass
class RunTotals:
    """One run's chunks, events, bytes read and phase walls, and when it was active."""

    first: float
    last: float = 0.0
    chunks: int = 0
    events: int = 0
    bytes: int = 0
    phases: dict[str, float] = field(default_factory=lambda: defaultdict(float))


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
            data.plugin._count_error("dashboard")
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
    setattr(application, _CURRENT, data)
    return True


def unserve(scheduler: Any, data: DashboardData) -> None:
    """Stop showing ``data`` (the page then says the plugin is not running)."""
    application = getattr(scheduler, "http_application", None)
    if getattr(application, _CURRENT, None) is data:
        setattr(application, _CURRENT, None)
