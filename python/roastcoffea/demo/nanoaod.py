"""Synthetic CMS NanoAOD files, written with uproot, for the demo and the tests.

The files look to coffea like collision data in NanoAOD (v12 branch types): a
TTree ``Events`` with ``run``/``luminosityBlock``/``event``, the collections
``Jet``, ``Muon``, ``Electron``, ``Photon``, ``Tau``, ``FatJet``, ``SubJet``,
``FsrPhoton`` and ``LowPtElectron`` (``n<Collection>`` int32 counters written
by uproot), the singletons ``MET`` and ``PV``, and a trigger and a filter bit.
Every cross-reference index that :class:`coffea.nanoevents.NanoAODSchema`
resolves for data is present and consistent (``Jet_muonIdx1/2`` list the first
two muons whose ``Muon_jetIdx`` points at the jet, and so on), so the schema
builds events without a single missing-cross-reference warning.

Physics, simplified but with the shapes an analysis sees: jet, lepton and
photon transverse momenta fall as power laws above NanoAOD's thresholds; a
fraction of events holds a Z boson decaying to two muons (or two electrons),
generated from a Breit-Wigner line shape, boosted and smeared, so the
opposite-sign dimuon mass peaks at 91 GeV; the other leptons are non-prompt,
often inside a jet and not isolated. Floats are float32 with the mantissa
rounded as NanoAOD rounds it, which matters for the compression ratio.

Compression: the default is ZLIB level 1, ROOT's own default for TTrees (ROOT
tried ZSTD and went back to ZLIB for TTrees because it packs sparse collections
better). CMS writes NanoAOD with LZMA level 9, which Python's ``lzma`` compresses
at about 2,200 events per CPU second, i.e. 15 CPU minutes for the default 2
million events against about 35 CPU seconds with ZLIB 1; LZMA 9 makes the files
about 40 % smaller and takes about 4 times longer to decompress. ZLIB 4 costs half as
much CPU again as ZLIB 1 for 2 % smaller files. Pass ``compression="lzma:9"``
to reproduce CMS files in that respect.

Each ``extend`` of the tree writes one basket per branch, so a file of
250,000 events written in blocks of ``basket_events`` = 25,000 has ten baskets
per branch; memory stays bounded by one block.

Layout: a TTree by default; ``layout="rntuple"`` writes the same events as an
RNTuple ``Events`` (ROOT's successor to TTree) with the same field names
(``nJet``, ``Jet_pt``, ...: a counter and a vector per collection member, as
CMS's RNTuple NanoAOD keeps them), each block one cluster, so the same analysis
reads either and gets the same numbers.

Files are cached: :func:`ensure_files` reuses a directory whose manifest
(``manifest.json``: parameters, library versions, file names and sizes) matches
the request, and regenerates it otherwise. Output is deterministic given the
parameters and the library versions recorded in the manifest.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from importlib.metadata import version
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import awkward as ak
import numpy as np
import uproot

#: Name of the tree, as in NanoAOD.
TREE = "Events"

#: Name of the cache manifest inside the output directory.
MANIFEST = "manifest.json"

#: Bumped whenever the content of the generated files changes for equal parameters.
FORMAT_VERSION = 1

DEFAULT_EVENTS = 2_000_000
DEFAULT_FILES = 8
DEFAULT_SEED = 20_260_901
DEFAULT_COMPRESSION = "zlib:1"
DEFAULT_BASKET_EVENTS = 25_000
#: How the events are stored: ROOT's TTree or RNTuple.
LAYOUTS = ("ttree", "rntuple")
DEFAULT_LAYOUT = "ttree"

#: Below this many events, files are written in the calling process: starting
#: worker processes (which import numpy, awkward and uproot) costs more.
PARALLEL_MIN_EVENTS = 200_000

#: Run number of every event; luminosity blocks hold LUMI_EVENTS events each.
RUN = 362_695
LUMI_EVENTS = 500

Z_MASS, Z_WIDTH = 91.1876, 2.4952
Z_MASS_RANGE = (60.0, 120.0)
MUON_MASS, ELECTRON_MASS = 0.1056584, 0.000511
#: Fractions of events holding a Z -> mu mu and a Z -> e e candidate.
Z_MUMU_FRACTION, Z_EE_FRACTION = 0.2, 0.08

_COMPRESSIONS: dict[str, Callable[[int], Any]] = {
    "zlib": uproot.ZLIB,
    "lzma": uproot.LZMA,
    "lz4": uproot.LZ4,
    "zstd": uproot.ZSTD,
}

Fields = dict[str, np.ndarray]


def parse_compression(spec: str) -> Any:
    """The uproot compression object of a ``"algorithm:level"`` string.

    Parameters
    ----------
    spec : str
        ``"zlib:4"``, ``"lzma:9"``, ``"lz4:4"``, ``"zstd:5"``, or ``"none"``.

    Returns
    -------
    uproot.compression.Compression or None
        None for ``"none"``.

    Raises
    ------
    ValueError
        If the algorithm is unknown or the level is not an integer in 1..9.
    """
    if spec == "none":
        return None
    algorithm, _, level = spec.partition(":")
    if algorithm not in _COMPRESSIONS or not level.isdigit() or not 1 <= int(level) <= 9:
        raise ValueError(
            f"compression must be 'none' or '<{'|'.join(_COMPRESSIONS)}>:<1-9>', got {spec!r}"
        )
    return _COMPRESSIONS[algorithm](int(level))


def events_per_file(n_events: int, n_files: int) -> list[int]:
    """Split ``n_events`` over ``n_files`` as evenly as possible, the larger files first."""
    base, extra = divmod(n_events, n_files)
    return [base + (i < extra) for i in range(n_files)]


# ---------------------------------------------------------------------------
# Random building blocks (all vectorised over a block of events).


def _round_mantissa(values: np.ndarray, bits: int) -> np.ndarray:
    """float32 ``values`` keeping ``bits`` mantissa bits (rounded), as NanoAOD stores floats."""
    raw = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    if bits >= 23:
        return raw.view(np.float32)
    shift = np.uint32(23 - bits)
    half = np.uint32(1 << (23 - bits - 1))
    return (((raw + half) >> shift) << shift).view(np.float32)


def _power_law(rng: np.random.Generator, n: int, minimum: float, index: float) -> np.ndarray:
    """Pareto-distributed values above ``minimum``: dN/dx ~ x^-(index + 1)."""
    return minimum * (1.0 - rng.random(n)) ** (-1.0 / index)


def _phi(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.uniform(-math.pi, math.pi, n)


def _choice(rng: np.random.Generator, n: int, values: list[int], p: list[float]) -> np.ndarray:
    return rng.choice(np.array(values, dtype=np.uint8), size=n, p=p)


def _z_decays(
    rng: np.random.Generator, n: int, lepton_mass: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two leptons from each of ``n`` Z bosons, as ``(pt, eta, phi)`` of shape (2, n).

    The Z mass follows a Breit-Wigner truncated to Z_MASS_RANGE (sampled exactly
    by inverting its CDF), its pT a gamma distribution peaking near 5 GeV, its
    rapidity a wide Gaussian; the decay is isotropic in the Z rest frame.
    """
    half_width = Z_WIDTH / 2
    lo, hi = (math.atan((m - Z_MASS) / half_width) for m in Z_MASS_RANGE)
    mass = Z_MASS + half_width * np.tan(rng.uniform(lo, hi, n))
    pt, rapidity, phi = rng.gamma(1.6, 7.0, n), rng.normal(0.0, 1.6, n), _phi(rng, n)
    mt = np.hypot(mass, pt)
    energy = mt * np.cosh(rapidity)
    boost = np.stack([pt * np.cos(phi), pt * np.sin(phi), mt * np.sinh(rapidity)]) / energy
    gamma = energy / mass

    cos_theta = rng.uniform(-1.0, 1.0, n)
    sin_theta, rest_phi = np.sqrt(1.0 - cos_theta**2), _phi(rng, n)
    momentum = np.sqrt(mass**2 / 4 - lepton_mass**2)
    rest = momentum * np.stack(
        [sin_theta * np.cos(rest_phi), sin_theta * np.sin(rest_phi), cos_theta]
    )
    rest_energy = mass / 2
    # Lorentz boost of (E, q) by beta: q' = q + beta (gamma^2/(gamma+1) beta.q + gamma E).
    dot = (boost * rest).sum(axis=0)
    lab = np.stack(
        [
            rest + boost * (gamma**2 / (gamma + 1) * dot + gamma * rest_energy),
            -rest + boost * (-(gamma**2) / (gamma + 1) * dot + gamma * rest_energy),
        ]
    )  # (lepton, xyz, n)
    lep_pt = np.hypot(lab[:, 0], lab[:, 1])
    return lep_pt, np.arcsinh(lab[:, 2] / lep_pt), np.arctan2(lab[:, 1], lab[:, 0])


def _random_refs(
    rng: np.random.Generator, event: np.ndarray, target_counts: np.ndarray, probability: float
) -> np.ndarray:
    """For objects in events ``event``: a random index into the event's target
    collection with ``probability`` (when the event has targets), else -1; int16."""
    available = target_counts[event]
    u = rng.random(event.size)
    picked = (rng.random(event.size) < probability) & (available > 0)
    return np.where(picked, (u * available).astype(np.int64), -1).astype(np.int16)


def _first_referrers(
    refs: np.ndarray, event: np.ndarray, target_counts: np.ndarray, k: int
) -> tuple[list[np.ndarray], np.ndarray]:
    """Invert source -> target references.

    For every target object: the local indices of the first ``k`` source objects
    (in source order) whose ``refs`` point at it, -1 where there are fewer, and the
    number of sources pointing at it.
    """
    target_offsets = np.concatenate([[0], np.cumsum(target_counts)])
    valid = refs >= 0
    target = target_offsets[event[valid]] + refs[valid]  # global target index
    source = _local_index(event)[valid]
    order = np.lexsort((source, target))
    target, source = target[order], source[order]
    position = np.arange(target.size)
    first = np.ones(target.size, dtype=bool)
    first[1:] = target[1:] != target[:-1]
    rank = position - np.maximum.accumulate(np.where(first, position, 0))
    out = []
    for r in range(k):
        column = np.full(target_offsets[-1], -1, dtype=np.int16)
        column[target[rank == r]] = source[rank == r]
        out.append(column)
    return out, np.bincount(target, minlength=target_offsets[-1])


def _sort_by_pt(n_events: int, event: np.ndarray, fields: Fields) -> tuple[np.ndarray, Fields]:
    """Group objects by event, highest pT first within an event (NanoAOD's order)."""
    order = np.lexsort((-fields["pt"], event))
    counts = np.bincount(event, minlength=n_events)
    return counts, {name: values[order] for name, values in fields.items()}


def _event_of(counts: np.ndarray) -> np.ndarray:
    """Event index of each object, from the objects per event."""
    return np.repeat(np.arange(counts.size), counts)


def _local_index(event: np.ndarray) -> np.ndarray:
    """Index of each object within its event, for objects grouped by (sorted) event."""
    if event.size == 0:
        return np.zeros(0, dtype=np.int64)
    counts = np.bincount(event)
    return np.arange(event.size) - np.repeat(np.cumsum(counts) - counts, counts)


def _poisson_objects(rng: np.random.Generator, n_events: int, mean: float) -> np.ndarray:
    """Event index of each object, with Poisson(``mean``) objects per event."""
    return np.repeat(np.arange(n_events), rng.poisson(mean, n_events))


# ---------------------------------------------------------------------------
# Collections. Each returns (counts per event, fields); field names without the
# collection prefix, values flat in event order.


def _jets(rng: np.random.Generator, n_events: int) -> tuple[np.ndarray, Fields]:
    event = _poisson_objects(rng, n_events, 4.3)
    n = event.size
    eta = rng.normal(0.0, 1.8, n)
    wide = np.abs(eta) > 4.7
    eta[wide] = rng.uniform(-4.7, 4.7, int(wide.sum()))
    pt = _power_law(rng, n, 15.0, 2.2)
    b_jet = rng.random(n) < 0.12
    btag = np.where(b_jet, rng.beta(4.0, 1.2, n), rng.beta(0.6, 12.0, n))
    fields = {
        "pt": pt,
        "eta": eta,
        "phi": _phi(rng, n),
        "mass": pt * np.clip(rng.normal(0.12, 0.04, n), 0.01, None),
        "btagDeepFlavB": btag,
        "area": rng.normal(0.50, 0.03, n),
        "jetId": _choice(rng, n, [0, 2, 6], [0.03, 0.05, 0.92]),
    }
    return _sort_by_pt(n_events, event, fields)


@dataclass(frozen=True)
class _Flavour:
    """What makes muons and electrons differ in the generator."""

    mass: float
    z_fraction: float
    fake_mean: float
    pt_min: float  #: acceptance, and the lower end of the non-prompt spectrum
    eta_max: float
    resolution: float
    isolation: str  #: the isolation branch
    iso_scale: tuple[float, float]  #: exponential scale of prompt, non-prompt isolation
    dxy_sigma: tuple[float, float]  #: cm, prompt and non-prompt
    dz_sigma: tuple[float, float]


_MUON = _Flavour(
    MUON_MASS, Z_MUMU_FRACTION, 0.45, 3.0, 2.4, 0.015, "pfRelIso04_all",
    (0.04, 0.6), (0.002, 0.02), (0.005, 0.05),
)  # fmt: skip
_ELECTRON = _Flavour(
    ELECTRON_MASS, Z_EE_FRACTION, 0.35, 5.0, 2.5, 0.025, "pfRelIso03_all",
    (0.05, 0.5), (0.003, 0.03), (0.006, 0.06),
)  # fmt: skip


def _leptons(
    rng: np.random.Generator, n_events: int, flavour: _Flavour
) -> tuple[np.ndarray, Fields, np.ndarray]:
    """Prompt Z leptons plus non-prompt ones, within acceptance, sorted by pT.

    Returns counts, fields (pt, eta, phi, mass, charge, isolation, dxy, dz) and
    a ``prompt`` mask that the caller uses for identification and jet matching.
    """
    f = flavour
    z_events = np.flatnonzero(rng.random(n_events) < f.z_fraction)
    z_pt, z_eta, z_phi = _z_decays(rng, z_events.size, f.mass)
    fake_event = _poisson_objects(rng, n_events, f.fake_mean)
    n_fake = fake_event.size
    event = np.concatenate([z_events, z_events, fake_event])
    pt = np.concatenate([z_pt.ravel(), _power_law(rng, n_fake, f.pt_min, 1.8)])
    pt *= 1.0 + rng.normal(0.0, f.resolution, pt.size)
    fields = {
        "pt": pt,
        "eta": np.concatenate([z_eta.ravel(), rng.uniform(-f.eta_max, f.eta_max, n_fake)]),
        "phi": np.concatenate([z_phi.ravel(), _phi(rng, n_fake)]),
        "mass": np.full(pt.size, f.mass),
        "charge": np.concatenate(
            [
                np.full(z_events.size, -1, dtype=np.int32),
                np.full(z_events.size, 1, dtype=np.int32),
                rng.choice(np.array([-1, 1], dtype=np.int32), n_fake),
            ]
        ),
        "prompt": np.arange(pt.size) < 2 * z_events.size,
    }
    accepted = (fields["pt"] > f.pt_min) & (np.abs(fields["eta"]) < f.eta_max)
    fields = {name: values[accepted] for name, values in fields.items()}
    counts, fields = _sort_by_pt(n_events, event[accepted], fields)
    prompt = fields.pop("prompt")
    n = prompt.size
    iso = [rng.exponential(scale, n) for scale in f.iso_scale]
    fields[f.isolation] = np.where(prompt, *iso)
    fields["dxy"] = rng.normal(0.0, np.where(prompt, *f.dxy_sigma))
    fields["dz"] = rng.normal(0.0, np.where(prompt, *f.dz_sigma))
    return counts, fields, prompt


def _muons(rng: np.random.Generator, n_events: int) -> tuple[np.ndarray, Fields, np.ndarray]:
    counts, fields, prompt = _leptons(rng, n_events, _MUON)
    fields["tightId"] = rng.random(prompt.size) < np.where(prompt, 0.97, 0.55)
    fields["mediumId"] = fields["tightId"] | (rng.random(prompt.size) < 0.5)
    return counts, fields, prompt


def _electrons(rng: np.random.Generator, n_events: int) -> tuple[np.ndarray, Fields, np.ndarray]:
    counts, fields, prompt = _leptons(rng, n_events, _ELECTRON)
    n = prompt.size
    fields["cutBased"] = np.where(
        prompt,
        _choice(rng, n, [0, 1, 2, 3, 4], [0.02, 0.03, 0.10, 0.25, 0.60]),
        _choice(rng, n, [0, 1, 2, 3, 4], [0.50, 0.20, 0.15, 0.10, 0.05]),
    )
    return counts, fields, prompt


def _simple_objects(
    rng: np.random.Generator,
    n_events: int,
    mean: float,
    pt_min: float,
    pt_index: float,
    eta_max: float,
) -> tuple[np.ndarray, np.ndarray, Fields]:
    """Event indices, counts and pT-sorted (pt, eta, phi) of a minor collection."""
    event = _poisson_objects(rng, n_events, mean)
    n = event.size
    fields = {
        "pt": _power_law(rng, n, pt_min, pt_index),
        "eta": rng.uniform(-eta_max, eta_max, n),
        "phi": _phi(rng, n),
    }
    counts, fields = _sort_by_pt(n_events, event, fields)
    return _event_of(counts), counts, fields


# ---------------------------------------------------------------------------
# One block of events.


def _block(rng: np.random.Generator, first: int, n: int) -> dict[str, Any]:
    """``n`` events starting at global event index ``first``, as uproot ``extend`` input."""
    n_jet, jet = _jets(rng, n)
    n_mu, mu, mu_prompt = _muons(rng, n)
    n_el, el, el_prompt = _electrons(rng, n)
    mu_event, el_event = _event_of(n_mu), _event_of(n_el)

    mu["jetIdx"] = np.where(
        mu_prompt,
        _random_refs(rng, mu_event, n_jet, 0.03),
        _random_refs(rng, mu_event, n_jet, 0.6),
    )
    el["jetIdx"] = np.where(
        el_prompt,
        _random_refs(rng, el_event, n_jet, 0.05),
        _random_refs(rng, el_event, n_jet, 0.5),
    )
    (jet["muonIdx1"], jet["muonIdx2"]), jet_n_mu = _first_referrers(
        mu["jetIdx"], mu_event, n_jet, 2
    )
    (jet["electronIdx1"], jet["electronIdx2"]), jet_n_el = _first_referrers(
        el["jetIdx"], el_event, n_jet, 2
    )
    jet["nMuons"], jet["nElectrons"] = jet_n_mu.astype(np.uint8), jet_n_el.astype(np.uint8)

    ph_event, n_ph, ph = _simple_objects(rng, n, 0.5, 5.0, 2.0, 2.5)
    ph["cutBased"] = _choice(rng, ph_event.size, [0, 1, 2, 3], [0.4, 0.3, 0.2, 0.1])
    ph["pfRelIso03_all"] = rng.exponential(0.3, ph_event.size)
    ph["electronIdx"] = _random_refs(rng, ph_event, n_el, 0.1)
    ph["jetIdx"] = _random_refs(rng, ph_event, n_jet, 0.4)
    (el["photonIdx"],), _ = _first_referrers(ph["electronIdx"], ph_event, n_el, 1)

    fsr_event, n_fsr, fsr = _simple_objects(rng, n, 0.05, 2.0, 2.0, 2.4)
    fsr["relIso03"] = rng.exponential(0.5, fsr_event.size)
    fsr["muonIdx"] = _random_refs(rng, fsr_event, n_mu, 1.0)
    (mu["fsrPhotonIdx"],), _ = _first_referrers(fsr["muonIdx"], fsr_event, n_mu, 1)

    tau_event, n_tau, tau = _simple_objects(rng, n, 0.7, 18.0, 2.5, 2.3)
    tau["mass"] = np.clip(rng.normal(0.9, 0.3, tau_event.size), 0.14, 1.8)
    tau["charge"] = rng.choice(np.array([-1, 1], dtype=np.int32), tau_event.size)
    tau["decayMode"] = _choice(rng, tau_event.size, [0, 1, 10, 11], [0.3, 0.45, 0.2, 0.05])
    tau["idDeepTau2017v2p1VSjet"] = _choice(
        rng, tau_event.size, [0, 1, 3, 7, 15, 31, 63, 127, 255], [0.3] + [0.0875] * 8
    )
    tau["jetIdx"] = _random_refs(rng, tau_event, n_jet, 0.9)

    fat_event, n_fat, fat = _simple_objects(rng, n, 0.3, 170.0, 3.0, 2.4)
    n_fat_total = fat_event.size
    fat["mass"] = fat["pt"] * np.clip(rng.normal(0.15, 0.05, n_fat_total), 0.01, None)
    fat["msoftdrop"] = fat["mass"] * rng.uniform(0.6, 0.95, n_fat_total)
    fat_local = _local_index(fat_event)
    fat["subJetIdx1"] = (2 * fat_local).astype(np.int16)
    fat["subJetIdx2"] = (2 * fat_local + 1).astype(np.int16)
    share = rng.uniform(0.5, 0.9, n_fat_total)
    subjet = {  # two per fat jet, in fat-jet order, as NanoAOD stores them
        "pt": np.stack([fat["pt"] * share, fat["pt"] * (1 - share)], axis=1).ravel(),
        "eta": np.repeat(fat["eta"], 2) + rng.normal(0.0, 0.2, 2 * n_fat_total),
        "phi": np.repeat(fat["phi"], 2) + rng.normal(0.0, 0.2, 2 * n_fat_total),
    }
    subjet["mass"] = subjet["pt"] * rng.uniform(0.02, 0.2, 2 * n_fat_total)
    subjet["btagDeepB"] = rng.beta(0.6, 8.0, 2 * n_fat_total)

    low_event, n_low, low = _simple_objects(rng, n, 0.3, 1.0, 2.0, 2.5)
    low["mass"] = np.full(low_event.size, ELECTRON_MASS)
    low["charge"] = rng.choice(np.array([-1, 1], dtype=np.int32), low_event.size)
    low["electronIdx"] = _random_refs(rng, low_event, n_el, 0.2)
    low["photonIdx"] = _random_refs(rng, low_event, n_ph, 0.05)

    gidx = np.arange(first, first + n, dtype=np.uint64)
    npvs = rng.poisson(32.0, n) + 1
    good_muon = (mu["pt"] > 26.0) & (mu["pfRelIso04_all"] < 0.15) & mu["tightId"]
    triggerable = np.bincount(mu_event[good_muon], minlength=n) > 0
    block: dict[str, Any] = {
        "run": np.full(n, RUN, dtype=np.uint32),
        "luminosityBlock": (1 + gidx // LUMI_EVENTS).astype(np.uint32),
        "event": gidx + np.uint64(1),
        "HLT_IsoMu24": (triggerable & (rng.random(n) < 0.92)) | (rng.random(n) < 0.002),
        "Flag_goodVertices": rng.random(n) < 0.999,
        "MET_pt": _round_mantissa(rng.gamma(2.0, 12.0, n), 10),
        "MET_phi": _round_mantissa(_phi(rng, n), 12),
        "MET_sumEt": _round_mantissa(
            np.bincount(_event_of(n_jet), weights=jet["pt"], minlength=n) + rng.gamma(8.0, 60.0, n),
            10,
        ),
        "PV_npvs": np.minimum(npvs, 255).astype(np.uint8),
        "PV_npvsGood": np.minimum(npvs - rng.binomial(npvs, 0.05), 255).astype(np.uint8),
        "PV_x": _round_mantissa(rng.normal(0.01, 0.002, n), 10),
        "PV_y": _round_mantissa(rng.normal(0.04, 0.002, n), 10),
        "PV_z": _round_mantissa(rng.normal(0.0, 3.5, n), 10),
    }
    for name, counts, fields in (
        ("Jet", n_jet, jet),
        ("Muon", n_mu, mu),
        ("Electron", n_el, el),
        ("Photon", n_ph, ph),
        ("Tau", n_tau, tau),
        ("FatJet", n_fat, fat),
        ("SubJet", 2 * n_fat, subjet),
        ("FsrPhoton", n_fsr, fsr),
        ("LowPtElectron", n_low, low),
    ):
        block[name] = _jagged(name, counts, fields)
    return block


#: Mantissa bits NanoAOD keeps (its ``precision`` settings): 10 for most floats,
#: more for lepton directions, the full 23 for lepton pT, fewer for isolations.
_LEPTONS = ("Muon", "Electron")
_ISOLATIONS = ("pfRelIso03_all", "pfRelIso04_all", "relIso03")


def _mantissa_bits(collection: str, field: str) -> int:
    if collection in _LEPTONS and field == "pt":
        return 23
    if collection in _LEPTONS and field in ("eta", "phi"):
        return 12
    return 6 if field in _ISOLATIONS else 10


def _jagged(collection: str, counts: np.ndarray, fields: Fields) -> ak.Array:
    """A jagged record array of flat ``fields``; float64 becomes (rounded) float32."""
    offsets = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    contents = []
    for name, values in fields.items():
        if values.dtype == np.float64:
            values = _round_mantissa(values, _mantissa_bits(collection, name))
        contents.append(ak.contents.NumpyArray(values))
    record = ak.contents.RecordArray(contents, list(fields), length=int(offsets[-1]))
    return ak.Array(ak.contents.ListOffsetArray(ak.index.Index64(offsets), record))


# ---------------------------------------------------------------------------
# Files.


def _write_file(
    path: Path,
    seed: int,
    index: int,
    first: int,
    n: int,
    compression: str,
    basket_events: int,
    layout: str = DEFAULT_LAYOUT,
) -> int:
    """Write ``n`` events (global indices from ``first``) to ``path``; returns its size."""
    rng = np.random.default_rng([seed, index])
    blocks = [
        (start, min(basket_events, first + n - start))
        for start in range(first, first + n, basket_events)
    ]
    partial = path.with_name(path.name + ".partial")
    with uproot.recreate(partial, compression=parse_compression(compression)) as out:
        stored = None
        for start, size in blocks:
            data = _block(rng, start, size)
            if layout == "rntuple":
                fields = ak.zip(_flat_fields(data), depth_limit=1)
                if stored is None:
                    stored = out.mkrntuple(TREE, fields)
                else:
                    stored.extend(fields)
            elif stored is None:
                stored = out.mktree(TREE, data, initial_basket_capacity=len(blocks) + 1)
            else:
                stored.extend(data)
    os.replace(partial, path)
    return path.stat().st_size


def _flat_fields(block: dict[str, Any]) -> dict[str, Any]:
    """A block as the TTree's branches: ``n<Collection>`` (int32) and ``<Collection>_<member>``."""
    fields: dict[str, Any] = {}
    for name, values in block.items():
        if not isinstance(values, ak.Array):
            fields[name] = values
            continue
        fields[f"n{name}"] = ak.to_numpy(ak.num(values)).astype(np.int32)
        for member in values.fields:
            fields[f"{name}_{member}"] = values[member]
    return fields


def _file_name(index: int) -> str:
    return f"nano_{index:03d}.root"


def generate(
    directory: str | os.PathLike[str],
    n_events: int = DEFAULT_EVENTS,
    n_files: int = DEFAULT_FILES,
    *,
    seed: int = DEFAULT_SEED,
    compression: str = DEFAULT_COMPRESSION,
    basket_events: int = DEFAULT_BASKET_EVENTS,
    processes: int | None = None,
    layout: str = DEFAULT_LAYOUT,
) -> list[Path]:
    """Write ``n_files`` synthetic NanoAOD files holding ``n_events`` in total.

    Files are independent random streams (seeded by ``(seed, file index)``), so
    they are written in parallel worker processes. Each file is written under a
    temporary name and renamed when complete. No manifest is written; see
    :func:`ensure_files` for the cached variant.

    Parameters
    ----------
    directory : path-like
        Output directory, created if missing.
    n_events : int, default 2,000,000
        Events over all files (split as evenly as possible).
    n_files : int, default 8
        Number of files, ``nano_000.root`` ...
    seed : int, default DEFAULT_SEED
        Seed of the random streams.
    compression : str, default "zlib:1"
        ``"<zlib|lzma|lz4|zstd>:<level>"`` or ``"none"`` (see :func:`parse_compression`).
    basket_events : int, default 25,000
        Events per block, i.e. per basket of every branch (per cluster of an RNTuple).
    processes : int, optional
        Worker processes; default ``min(n_files, os.cpu_count())``, or 1 below
        PARALLEL_MIN_EVENTS events. 1 writes in this process.
    layout : {"ttree", "rntuple"}, default "ttree"
        Store the events as a TTree or as an RNTuple, both named ``Events``.

    Returns
    -------
    list of pathlib.Path
        The files, in order.

    Raises
    ------
    ValueError
        If a count is not positive, there are fewer events than files, or the
        compression or the layout is unknown.
    """
    if n_files < 1 or n_events < n_files or basket_events < 1:
        raise ValueError(
            f"need n_files >= 1, n_events >= n_files and basket_events >= 1, got "
            f"n_events={n_events}, n_files={n_files}, basket_events={basket_events}"
        )
    parse_compression(compression)
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    out_dir = Path(directory)
    out_dir.mkdir(parents=True, exist_ok=True)
    sizes = events_per_file(n_events, n_files)
    firsts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).tolist()
    paths = [out_dir / _file_name(i) for i in range(n_files)]
    jobs = [
        (paths[i], seed, i, firsts[i], sizes[i], compression, basket_events, layout)
        for i in range(n_files)
    ]
    if processes is None:
        processes = 1 if n_events < PARALLEL_MIN_EVENTS else min(n_files, os.cpu_count() or 1)
    if processes <= 1:
        for job in jobs:
            _write_file(*job)
    else:
        # spawn, not fork: callers may already run threads (a Dask client).
        with ProcessPoolExecutor(processes, mp_context=get_context("spawn")) as pool:
            for future in [pool.submit(_write_file, *job) for job in jobs]:
                future.result()
    return paths


#: The generator's settings a manifest records besides the counts, and their defaults.
SETTING_DEFAULTS = {
    "seed": DEFAULT_SEED,
    "compression": DEFAULT_COMPRESSION,
    "basket_events": DEFAULT_BASKET_EVENTS,
    "layout": DEFAULT_LAYOUT,
}


def _manifest_header(
    n_events: int, n_files: int, seed: int, compression: str, basket_events: int, layout: str
) -> dict[str, Any]:
    return {
        "format": FORMAT_VERSION,
        "parameters": {
            "n_events": n_events,
            "n_files": n_files,
            "seed": seed,
            "compression": compression,
            "basket_events": basket_events,
            "layout": layout,
        },
        "versions": {name: version(name) for name in ("roastcoffea", "uproot", "awkward", "numpy")},
    }


def _cached(out_dir: Path, header: dict[str, Any]) -> list[Path] | None:
    """The files of ``out_dir`` if its manifest matches ``header`` and every file is intact."""
    try:
        manifest = json.loads((out_dir / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or {k: manifest.get(k) for k in header} != header:
        return None
    paths = []
    for entry in manifest.get("files", []):
        path = out_dir / entry["name"]
        if not path.is_file() or path.stat().st_size != entry["size"]:
            return None
        paths.append(path)
    return paths if len(paths) == header["parameters"]["n_files"] else None


def ensure_files(
    directory: str | os.PathLike[str],
    n_events: int = DEFAULT_EVENTS,
    n_files: int = DEFAULT_FILES,
    **settings: Any,
) -> list[Path]:
    """The synthetic files for these parameters, generated only when not cached.

    ``directory/manifest.json`` records the parameters, the versions of
    roastcoffea, uproot, awkward and numpy, and each file's name and size. When
    it matches and the files are intact they are returned untouched; otherwise
    the old files are removed and new ones generated (the manifest is written
    last, so an interrupted generation is redone on the next call).

    Parameters
    ----------
    directory : path-like
        Cache directory (one file set per directory).
    n_events, n_files
        As for :func:`generate`.
    **settings
        ``seed``, ``compression``, ``basket_events`` and ``layout``, as for :func:`generate`.

    Returns
    -------
    list of pathlib.Path
        The files, in order.
    """
    out_dir = Path(directory)
    unknown = set(settings) - set(SETTING_DEFAULTS)
    if unknown:
        raise TypeError(f"ensure_files got unknown settings {sorted(unknown)}")
    settings = {**SETTING_DEFAULTS, **settings}
    header = _manifest_header(n_events, n_files, **settings)
    cached = _cached(out_dir, header)
    if cached is not None:
        return cached
    manifest_path = out_dir / MANIFEST
    manifest_path.unlink(missing_ok=True)
    for stale in out_dir.glob("nano_*.root*"):
        stale.unlink()
    paths = generate(out_dir, n_events, n_files, **settings)
    counts = events_per_file(n_events, n_files)
    manifest = {
        **header,
        "tree": TREE,
        "files": [
            {"name": p.name, "size": p.stat().st_size, "events": c}
            for p, c in zip(paths, counts, strict=True)
        ],
    }
    partial = manifest_path.with_name(MANIFEST + ".partial")
    partial.write_text(json.dumps(manifest, indent=2) + "\n")
    os.replace(partial, manifest_path)
    return paths
