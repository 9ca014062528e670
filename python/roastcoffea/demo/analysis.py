"""The demo analysis: a dijet + dimuon coffea processor, run on a local cluster.

:class:`DemoProcessor` selects jets and muons in NanoAOD events and fills the
leading-dijet mass, the opposite-sign dimuon mass around the Z, and a cutflow.
Its ``process`` is wrapped by :func:`roastcoffea.track_metrics` and its steps are
timed with :func:`roastcoffea.track_time`, :func:`roastcoffea.track_bytes` and
:func:`roastcoffea.track_memory`, so every chunk becomes a chunk record.

:func:`run_demo` generates (or reuses) the synthetic files of
:mod:`roastcoffea.demo.nanoaod`, runs the processor with coffea's ``Runner`` and
``DaskExecutor`` on a two-worker ``LocalCluster`` inside a
:class:`roastcoffea.MetricsCollector`, prints the summary and saves the
measurement.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import awkward as ak
import hist
from coffea import processor
from coffea.nanoevents import NanoAODSchema
from distributed import Client, LocalCluster

from roastcoffea.demo.nanoaod import (
    DEFAULT_COMPRESSION,
    DEFAULT_EVENTS,
    DEFAULT_FILES,
    DEFAULT_LAYOUT,
    DEFAULT_SEED,
    TREE,
    ensure_files,
)
from roastcoffea.instrument import (
    BaseInstrumentationContext,
    track_bytes,
    track_memory,
    track_metrics,
    track_time,
)
from roastcoffea.units import format_bytes, format_time

#: Name of the dataset in the fileset and in the output.
DATASET = "SyntheticNanoAOD"

# Jet selection: tight jet ID (bit 1 of jetId), inside the tracker.
JET_PT_MIN, JET_ETA_MAX, JET_ID_TIGHT = 30.0, 2.5, 2
# Muon selection: tight, isolated, in acceptance; Z window on the pair mass.
MUON_PT_MIN, MUON_ETA_MAX, MUON_ISO_MAX = 15.0, 2.4, 0.15
Z_WINDOW = (76.0, 106.0)

#: Cutflow steps in order: what each count means is in :meth:`DemoProcessor.process`.
CUTFLOW = ("events", "dijet", "dimuon", "dimuon_os", "z_window")

DEFAULT_CHUNKSIZE = 100_000
DEFAULT_OUTPUT = Path("roastcoffea-demo")


def default_data_dir() -> Path:
    """Where the demo caches its files: ``$ROASTCOFFEA_CACHE/demo``, else
    ``~/.cache/roastcoffea/demo``."""
    root = os.environ.get("ROASTCOFFEA_CACHE")
    base = Path(root) if root else Path.home() / ".cache" / "roastcoffea"
    return base / "demo"


def mjj_hist() -> hist.Hist:
    """Empty leading-dijet mass histogram (GeV)."""
    return hist.Hist.new.Reg(100, 0.0, 2000.0, name="mjj", label="m(jj) [GeV]").Int64()


def mll_hist() -> hist.Hist:
    """Empty opposite-sign dimuon mass histogram (GeV), 1 GeV bins around the Z."""
    return hist.Hist.new.Reg(60, 60.0, 120.0, name="mll", label="m(mu mu) [GeV]").Int64()


class ZCandidates(BaseInstrumentationContext):
    """Records the chunk's number of Z candidates as the custom metric ``z_candidates``."""

    def __init__(self) -> None:
        self.count = 0

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.record_metric("z_candidates", self.count)


class DemoProcessor(processor.ProcessorABC):
    """Dijet and dimuon selection on NanoAOD events.

    Output per dataset: ``{"mjj": Hist, "mll": Hist, "cutflow": {step: int}}``
    with the cutflow steps of :data:`CUTFLOW`:

    - ``events``: events processed;
    - ``dijet``: events with at least two good jets (pT > 30 GeV, |eta| < 2.5,
      tight ID); ``mjj`` holds the invariant mass of the two leading ones;
    - ``dimuon``: events with exactly two good muons (pT > 15 GeV, |eta| < 2.4,
      tight ID, relative isolation < 0.15);
    - ``dimuon_os``: of those, the pairs of opposite charge; ``mll`` holds their mass;
    - ``z_window``: of those, the pairs with 76 < m < 106 GeV.
    """

    @track_metrics
    def process(self, events: Any) -> dict[str, Any]:
        """Select, fill and count one chunk of events."""
        dataset = events.metadata["dataset"]
        with track_time(self, "jets"), track_bytes(self, events, "jets"):
            jets = events.Jet
            good_jet = (
                (jets.pt > JET_PT_MIN)
                & (abs(jets.eta) < JET_ETA_MAX)
                & ((jets.jetId & JET_ID_TIGHT) > 0)
            )
            jets = jets[good_jet]
            dijets = jets[ak.num(jets) >= 2]
            mjj = (dijets[:, 0] + dijets[:, 1]).mass
        with track_time(self, "muons"), track_bytes(self, events, "muons"), ZCandidates() as z:
            muons = events.Muon
            good_muon = (
                (muons.pt > MUON_PT_MIN)
                & (abs(muons.eta) < MUON_ETA_MAX)
                & muons.tightId
                & (muons.pfRelIso04_all < MUON_ISO_MAX)
            )
            muons = muons[good_muon]
            pairs = muons[ak.num(muons) == 2]
            pairs = pairs[pairs[:, 0].charge != pairs[:, 1].charge]
            mll = (pairs[:, 0] + pairs[:, 1]).mass
            in_window = (mll > Z_WINDOW[0]) & (mll < Z_WINDOW[1])
            z.count = int(ak.sum(in_window))
        with track_time(self, "histograms"), track_memory(self, "histograms"):
            h_mjj, h_mll = mjj_hist(), mll_hist()
            h_mjj.fill(mjj=ak.to_numpy(mjj))
            h_mll.fill(mll=ak.to_numpy(mll))
        cutflow = {
            "events": len(events),
            "dijet": len(dijets),
            "dimuon": int(ak.sum(ak.num(muons) == 2)),
            "dimuon_os": len(pairs),
            "z_window": z.count,
        }
        return {dataset: {"mjj": h_mjj, "mll": h_mll, "cutflow": cutflow}}

    def postprocess(self, accumulator: dict[str, Any]) -> dict[str, Any]:
        """Nothing to do: the histograms and counts are final."""
        return accumulator


@dataclass
class DemoResult:
    """What :func:`run_demo` returns.

    Attributes
    ----------
    files : list of pathlib.Path
        The input files.
    output : dict
        The processor's accumulated output.
    report : dict
        coffea's report (``savemetrics=True``).
    wall_seconds : float
        Wall time of the ``Runner`` call.
    metrics : dict or None
        The collector's metrics; None when run with ``collect=False``.
    measurement : pathlib.Path or None
        The saved measurement directory; None when run with ``collect=False``.
    html_report : pathlib.Path or None
        The HTML report in the measurement directory; None when not written.
    """

    files: list[Path]
    output: dict[str, Any]
    report: dict[str, Any]
    wall_seconds: float
    metrics: dict[str, Any] | None = None
    measurement: Path | None = None
    html_report: Path | None = None


def _run(client: Client, fileset: dict[str, Any], chunksize: int) -> tuple[dict, dict, float]:
    runner = processor.Runner(
        executor=processor.DaskExecutor(client=client),
        schema=NanoAODSchema,
        chunksize=chunksize,
        savemetrics=True,
    )
    started = time.perf_counter()
    output, report = runner(fileset, DemoProcessor(), treename=TREE)
    return output, report, time.perf_counter() - started


def local_cluster(n_workers: int) -> LocalCluster:
    """The demo's cluster: ``n_workers`` single-threaded worker processes, every server
    (the scheduler, its dashboard on a free port, the workers) on the loopback only."""
    return LocalCluster(
        n_workers=n_workers,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
    )


def run_demo(
    directory: str | os.PathLike[str] | None = None,
    n_events: int = DEFAULT_EVENTS,
    n_files: int = DEFAULT_FILES,
    chunksize: int = DEFAULT_CHUNKSIZE,
    n_workers: int = 2,
    output_dir: str | os.PathLike[str] = DEFAULT_OUTPUT,
    *,
    seed: int = DEFAULT_SEED,
    compression: str = DEFAULT_COMPRESSION,
    measurement_name: str = "demo",
    client: Client | None = None,
    collect: bool = True,
    summary: bool = True,
    report: bool = False,
    xrootd: bool = False,
    layout: str = DEFAULT_LAYOUT,
) -> DemoResult:
    """Run the demo analysis on synthetic NanoAOD, measured by a MetricsCollector.

    Parameters
    ----------
    directory : path-like, optional
        Cache directory of the input files; default :func:`default_data_dir`.
    n_events : int, default 2,000,000
        Events over all files.
    n_files : int, default 8
        Number of files.
    chunksize : int, default 100,000
        coffea's chunk size in events.
    n_workers : int, default 2
        Worker processes (one thread each) of the LocalCluster started here.
    output_dir : path-like, default "roastcoffea-demo"
        Where the measurement directory is saved.
    seed, compression
        Of the generated files (see :func:`roastcoffea.demo.nanoaod.generate`).
    measurement_name : str, default "demo"
        Name of the measurement directory inside ``output_dir`` (overwritten).
    client : distributed.Client, optional
        Run on this client's cluster instead of starting a LocalCluster.
    collect : bool, default True
        Measure with a MetricsCollector, print its summary and save the
        measurement; False runs the bare analysis (the benchmark baseline).
    summary : bool, default True
        Print the collector's summary.
    report : bool, default False
        Also write the HTML report, ``report.html`` in the measurement directory.
    xrootd : bool, default False
        Serve the files from a local XRootD server (:mod:`roastcoffea.demo.xrootd`)
        and read them as ``root://`` URLs, as at a facility.
    layout : {"ttree", "rntuple"}, default "ttree"
        How the generated files store the events.

    Returns
    -------
    DemoResult
    """
    if chunksize < 1 or n_workers < 1:
        raise ValueError(f"need chunksize >= 1 and n_workers >= 1, got {chunksize}, {n_workers}")
    files = ensure_files(
        default_data_dir() if directory is None else directory,
        n_events,
        n_files,
        seed=seed,
        compression=compression,
        layout=layout,
    )
    with contextlib.ExitStack() as own:
        urls = {str(path): str(path) for path in files}
        if xrootd:
            from roastcoffea.demo.xrootd import serve

            urls = own.enter_context(serve(files))
        fileset = {DATASET: {"files": {urls[str(path)]: TREE for path in files}}}
        if client is None:
            cluster = own.enter_context(local_cluster(n_workers))
            client = own.enter_context(Client(cluster))
        return _measured(
            client,
            files,
            fileset,
            chunksize,
            output_dir,
            measurement_name,
            collect,
            summary,
            report,
        )


def _measured(
    client: Client,
    files: list[Path],
    fileset: dict[str, Any],
    chunksize: int,
    output_dir: str | os.PathLike[str],
    measurement_name: str,
    collect: bool,
    summary: bool,
    report: bool,
) -> DemoResult:
    if not collect:
        output, coffea_report, wall = _run(client, fileset, chunksize)
        return DemoResult(files, output, coffea_report, wall)
    # Imported here: workers unpickle DemoProcessor from this module and need
    # nothing of the collector side.
    from roastcoffea.collector import MetricsCollector

    with MetricsCollector(client) as collector:
        output, coffea_report, wall = _run(client, fileset, chunksize)
        collector.set_coffea_report(coffea_report)
    if summary:
        collector.print_summary()
    path = Path(collector.save_measurement(Path(output_dir), measurement_name, overwrite=True))
    html = collector.save_report(path / "report.html") if report else None
    return DemoResult(files, output, coffea_report, wall, collector.get_metrics(), path, html)


def main(
    data_dir: str | os.PathLike[str] | None = None,
    n_events: int = DEFAULT_EVENTS,
    n_files: int = DEFAULT_FILES,
    **run_options: Any,
) -> int:
    """The ``roastcoffea demo`` command; returns the process exit code.

    Makes the input files when missing, then :func:`run_demo` with
    ``run_options`` (``chunksize``, ``n_workers``, ``output_dir``, ``report``, ``xrootd``,
    ``layout``).
    """
    layout = run_options.get("layout", DEFAULT_LAYOUT)
    directory = default_data_dir() if data_dir is None else Path(data_dir)
    if data_dir is None and layout != DEFAULT_LAYOUT:  # a cache of its own per layout
        directory = directory.with_name(f"{directory.name}-{layout}")
    print(
        f"input: {n_events:,} synthetic NanoAOD events in {n_files} files ({layout}) "
        f"under {directory}"
    )
    started = time.perf_counter()
    files = ensure_files(directory, n_events, n_files, layout=layout)
    size = sum(path.stat().st_size for path in files)
    elapsed = format_time(time.perf_counter() - started)
    print(f"input ready in {elapsed} ({format_bytes(size)})")
    result = run_demo(directory, n_events, n_files, **run_options)
    counts = result.output[DATASET]["cutflow"]
    print("cutflow: " + ", ".join(f"{step} {counts[step]:,}" for step in CUTFLOW))
    print(f"measurement saved to {result.measurement}")
    if result.html_report is not None:
        print(f"report written to {result.html_report}")
    return 0
