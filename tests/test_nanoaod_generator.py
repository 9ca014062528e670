"""The synthetic NanoAOD generator: real ROOT files that coffea's NanoAODSchema reads."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import awkward as ak
import numpy as np
import pytest
import uproot
from coffea.nanoevents import NanoAODSchema, NanoEventsFactory

from roastcoffea.demo import nanoaod

N_EVENTS, N_FILES, BASKET_EVENTS = 20_000, 2, 2_500


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return nanoaod.ensure_files(
        tmp_path_factory.mktemp("nano"), N_EVENTS, N_FILES, basket_events=BASKET_EVENTS
    )


@pytest.fixture(scope="module")
def events(files: list[Path]) -> list[ak.Array]:
    """Eager NanoEvents of every file; any schema warning fails the test."""
    assert NanoAODSchema.warn_missing_crossrefs
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for path in files:
            factory = NanoEventsFactory.from_root(
                {str(path): "Events"}, schemaclass=NanoAODSchema, mode="eager"
            )
            out.append(factory.events())
    return out


def _all(events: list[ak.Array], collection: str) -> ak.Array:
    return ak.concatenate([ev[collection] for ev in events])


def test_files_hold_the_requested_events(files: list[Path], events: list[ak.Array]) -> None:
    assert [p.name for p in files] == ["nano_000.root", "nano_001.root"]
    assert [len(ev) for ev in events] == [10_000, 10_000]
    ids = np.concatenate([ak.to_numpy(ev.event) for ev in events])
    np.testing.assert_array_equal(ids, np.arange(1, N_EVENTS + 1))
    for path in files:
        tree = uproot.open(path)["Events"]
        assert tree.num_entries == 10_000
        for name in ("nJet", "nMuon", "nElectron"):
            counts = tree[name].array(library="np")
            leaf = tree[name[1:] + "_pt"].array()
            assert counts.sum() == ak.count(leaf)


def test_branch_types_are_nanoaod_types(files: list[Path]) -> None:
    tree = uproot.open(files[0])["Events"]
    expected = {
        "run": "uint32",
        "luminosityBlock": "uint32",
        "event": "uint64",
        "nJet": "int32",
        "nMuon": "int32",
        "nElectron": "int32",
        "Jet_pt": "float32",
        "Jet_btagDeepFlavB": "float32",
        "Jet_jetId": "uint8",
        "Jet_muonIdx1": "int16",
        "Jet_electronIdx2": "int16",
        "Muon_pt": "float32",
        "Muon_charge": "int32",
        "Muon_pfRelIso04_all": "float32",
        "Muon_tightId": "bool",
        "Muon_jetIdx": "int16",
        "Electron_cutBased": "uint8",
        "Electron_jetIdx": "int16",
        "MET_pt": "float32",
        "HLT_IsoMu24": "bool",
    }
    for name, dtype in expected.items():
        interpretation = tree[name].interpretation
        content = getattr(interpretation, "content", interpretation)
        assert content.to_dtype.name == dtype, name


def test_collections_have_their_fields(events: list[ak.Array]) -> None:
    ev = events[0]
    for collection, fields in {
        "Jet": ["pt", "eta", "phi", "mass", "btagDeepFlavB", "jetId", "muonIdx1", "electronIdx1"],
        "Muon": ["pt", "eta", "phi", "mass", "charge", "pfRelIso04_all", "tightId", "jetIdx"],
        "Electron": ["pt", "eta", "phi", "mass", "charge", "cutBased", "jetIdx"],
        "MET": ["pt", "phi"],
    }.items():
        assert set(fields) <= set(ev[collection].fields), collection
    masses = ak.to_numpy(ak.flatten(ev.Muon.mass))
    np.testing.assert_allclose(masses, nanoaod.MUON_MASS, rtol=1e-3)  # 10-bit mantissa


def test_cross_references_resolve_both_ways(events: list[ak.Array]) -> None:
    ev = events[1]  # the second file: global indices must not be off by a file
    muons = ak.flatten(ev.Muon)
    matched = ak.flatten(ev.Muon.matched_jet)
    has_jet = muons.jetIdx >= 0
    assert 0.1 < ak.mean(has_jet) < 0.9
    # Independently: the jet pT at (event's first jet + Muon_jetIdx) in the flat jet list.
    jet_start = np.concatenate([[0], np.cumsum(ak.to_numpy(ak.num(ev.Jet)))[:-1]])
    muon_event = ak.to_numpy(ak.flatten(ak.broadcast_arrays(np.arange(len(ev)), ev.Muon.pt)[0]))
    local = ak.to_numpy(muons.jetIdx)
    flat_jet_pt = ak.to_numpy(ak.flatten(ev.Jet.pt))
    expected = flat_jet_pt[jet_start[muon_event[local >= 0]] + local[local >= 0]]
    np.testing.assert_array_equal(ak.to_numpy(matched.pt[has_jet]), expected)
    # Jet.matched_muons (from Jet_muonIdx1/2) lists muons that point back at the jet.
    jet_index = ak.local_index(ev.Jet.pt)[:, :, np.newaxis]
    back = ev.Jet.matched_muons.jetIdx
    assert ak.all(ak.fill_none(back == jet_index, True))
    n_listed = ak.sum(ak.num(ak.drop_none(ev.Jet.matched_muons, axis=2), axis=2))
    n_pointing = ak.sum(ak.flatten(ev.Jet.nMuons) >= 1) + ak.sum(ak.flatten(ev.Jet.nMuons) >= 2)
    assert n_listed == n_pointing > 0
    assert ak.sum(ev.Jet.nMuons) == ak.sum(has_jet)
    electrons = ak.flatten(ev.Jet.matched_electrons, axis=2)
    assert ak.all(ak.fill_none(electrons.jetIdx >= 0, True))


def test_multiplicities_and_spectra_are_realistic(events: list[ak.Array]) -> None:
    jets, muons, electrons = (_all(events, name) for name in ("Jet", "Muon", "Electron"))
    assert 4.0 < ak.mean(ak.num(jets)) < 4.6
    assert 0.6 < ak.mean(ak.num(muons)) < 1.1
    assert 0.4 < ak.mean(ak.num(electrons)) < 0.8
    pt = ak.to_numpy(ak.flatten(jets.pt))
    assert pt.min() >= 15.0
    counts, _ = np.histogram(pt, bins=[15, 30, 60, 120, 240, 480])
    assert np.all(np.diff(counts) < 0), counts  # falling spectrum
    assert ak.all(jets.pt[:, :-1] >= jets.pt[:, 1:])  # pT ordered, as in NanoAOD


def test_opposite_sign_dimuons_peak_at_the_z(events: list[ak.Array]) -> None:
    muons = _all(events, "Muon")
    muons = muons[(muons.pt > 15) & muons.tightId & (muons.pfRelIso04_all < 0.15)]
    pairs = muons[ak.num(muons) == 2]
    pairs = pairs[pairs[:, 0].charge != pairs[:, 1].charge]
    mass = ak.to_numpy((pairs[:, 0] + pairs[:, 1]).mass)
    assert len(mass) > 0.08 * N_EVENTS
    counts, edges = np.histogram(mass, bins=60, range=(60, 120))
    assert 88 <= edges[np.argmax(counts)] < 94
    assert np.mean((mass > 81) & (mass < 101)) > 0.8


def test_compression_and_baskets(files: list[Path]) -> None:
    with uproot.open(files[0]) as f:
        assert f.file.compression == uproot.ZLIB(1)
        tree = f["Events"]
        compressed = sum(b.compressed_bytes for b in tree.branches)
        uncompressed = sum(b.uncompressed_bytes for b in tree.branches)
        assert {b.num_baskets for b in tree.branches} == {10_000 // BASKET_EVENTS}
    assert compressed < uncompressed / 2.5
    assert files[0].stat().st_size < uncompressed / 2


def test_cache_is_reused_and_regenerated_on_change(tmp_path: Path) -> None:
    first = nanoaod.ensure_files(tmp_path, 3_000, 2, seed=1)
    stamps = [p.stat().st_mtime_ns for p in first]
    again = nanoaod.ensure_files(tmp_path, 3_000, 2, seed=1)
    assert again == first
    assert [p.stat().st_mtime_ns for p in again] == stamps

    manifest = json.loads((tmp_path / nanoaod.MANIFEST).read_text())
    assert manifest["parameters"] == {
        "n_events": 3_000,
        "n_files": 2,
        "seed": 1,
        "compression": "zlib:1",
        "basket_events": nanoaod.DEFAULT_BASKET_EVENTS,
        "layout": "ttree",
    }
    assert manifest["versions"]["uproot"] == uproot.__version__
    assert [f["size"] for f in manifest["files"]] == [p.stat().st_size for p in first]

    before = uproot.open(first[0])["Events"]["Jet_pt"].array()
    reseeded = nanoaod.ensure_files(tmp_path, 3_000, 3, seed=2)
    assert [p.name for p in reseeded] == ["nano_000.root", "nano_001.root", "nano_002.root"]
    after = uproot.open(reseeded[0])["Events"]["Jet_pt"].array()
    assert not ak.array_equal(before, after)
    assert json.loads((tmp_path / nanoaod.MANIFEST).read_text())["parameters"]["seed"] == 2

    # A damaged file is noticed and rewritten; fewer files remove the stale ones.
    with reseeded[1].open("r+b") as f:
        f.truncate(100)
    repaired = nanoaod.ensure_files(tmp_path, 3_000, 3, seed=2)
    assert uproot.open(repaired[1])["Events"].num_entries == 1_000
    assert len(nanoaod.ensure_files(tmp_path, 3_000, 2, seed=2)) == 2
    assert sorted(p.name for p in tmp_path.glob("*.root")) == ["nano_000.root", "nano_001.root"]

    # Another layout is another set of files: the same events, as an RNTuple.
    ttree = uproot.open(tmp_path / "nano_000.root")["Events"]["Jet_pt"].array()
    rntuple = nanoaod.ensure_files(tmp_path, 3_000, 2, seed=2, layout="rntuple")
    stored = uproot.open(rntuple[0])["Events"]
    assert type(stored).__name__ == "Model_ROOT_3a3a_RNTuple"
    assert ak.array_equal(stored["Jet_pt"].array(), ttree)
    assert json.loads((tmp_path / nanoaod.MANIFEST).read_text())["parameters"]["layout"] == (
        "rntuple"
    )


def test_generation_is_deterministic(tmp_path: Path) -> None:
    a = nanoaod.generate(tmp_path / "a", 2_000, 1, seed=7, processes=1)
    b = nanoaod.generate(tmp_path / "b", 2_000, 1, seed=7, processes=1)
    arrays_a = uproot.open(a[0])["Events"].arrays()
    arrays_b = uproot.open(b[0])["Events"].arrays()
    assert arrays_a.fields == arrays_b.fields
    for field in arrays_a.fields:
        assert ak.array_equal(arrays_a[field], arrays_b[field]), field


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="compression"):
        nanoaod.parse_compression("gzip:3")
    with pytest.raises(ValueError, match="compression"):
        nanoaod.parse_compression("zlib:0")
    with pytest.raises(ValueError, match="n_events >= n_files"):
        nanoaod.generate(tmp_path, 1, 2)
    with pytest.raises(ValueError, match="layout"):
        nanoaod.generate(tmp_path, 2, 1, layout="parquet")
    assert nanoaod.parse_compression("none") is None
    assert nanoaod.parse_compression("lzma:9") == uproot.LZMA(9)
    assert nanoaod.events_per_file(10, 3) == [4, 3, 3]
