"""The processor the cross-version benchmarks run, with and without ``@track_metrics``.

Only the API roastcoffea 0.1.2 shares with ours (``track_metrics``, ``track_time``), so
the same file runs under either package.
"""

from __future__ import annotations

from typing import Any

import awkward as ak
from coffea import processor

from roastcoffea import track_metrics, track_time  # whichever roastcoffea runs this file

TREE = "Events"


class BareAnalysis(processor.ProcessorABC):
    """Leading dijet mass and good-muon count, in two timed sections (which do nothing
    outside a ``@track_metrics`` call)."""

    def process(self, events: Any) -> dict[str, Any]:
        with track_time(self, "jets"):
            jets = events.Jet[events.Jet.pt > 30]
            dijets = jets[ak.num(jets) >= 2]
            mjj = (dijets[:, 0] + dijets[:, 1]).mass
        with track_time(self, "muons"):
            muons = events.Muon[(events.Muon.pt > 15) & (abs(events.Muon.eta) < 2.4)]
            n_muons = int(ak.sum(ak.num(muons)))
        return {"events": len(events), "mjj_sum": float(ak.sum(mjj)), "muons": n_muons}

    def postprocess(self, accumulator: Any) -> Any:
        return accumulator


class Analysis(BareAnalysis):
    """The same, measured."""

    process = track_metrics(BareAnalysis.process)


def chunk_events(file: Any, path: str, start: int, stop: int) -> Any:
    """A chunk's events as coffea's executor builds them: virtual, with an access log and
    the work item's metadata, from an open uproot file."""
    from coffea.nanoevents import NanoAODSchema, NanoEventsFactory

    metadata = {
        "dataset": "demo",
        "filename": path,
        "treename": TREE,
        "entrystart": start,
        "entrystop": stop,
        "fileuuid": str(file.file.uuid),
    }
    factory = NanoEventsFactory.from_root(
        file=file,
        treepath=TREE,
        schemaclass=NanoAODSchema,
        metadata=metadata,
        access_log=[],
        mode="virtual",
        entry_start=start,
        entry_stop=stop,
    )
    return factory.events()
