"""A chunk's in-range bytes from grouped basket boundaries equal a pass over every basket."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import uproot

from roastcoffea.instrument import _baskets
from roastcoffea.instrument._baskets import RangeBytes, TreeIndex


def direct(starts: np.ndarray, stops: np.ndarray, compressed: np.ndarray, a: int, b: int) -> int:
    """What ``RangeBytes`` must give: every basket overlapping ``[a, b)``, tested one by one."""
    return int(compressed[(starts < b) & (stops > a)].sum())


def branch_baskets(
    layouts: list[tuple[list[int], list[int], list[int]]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[tuple[int, int]]]:
    """Flat (starts, stops, compressed, seeks) and per-branch spans of ``layouts``, each a
    branch's (starts, stops, seeks); its baskets are 100 + their position bytes."""
    fields: list[list[int]] = [[], [], [], []]
    spans = []
    for starts, stops, seeks in layouts:
        low = len(fields[0])
        spans.append((low, low + len(starts)))
        fields[0] += starts
        fields[1] += stops
        fields[2] += [100 + low + i for i in range(len(starts))]
        fields[3] += seeks
    starts, stops, compressed, seeks = (np.array(f, dtype=np.int64) for f in fields)
    return starts, stops, compressed, seeks, spans


@pytest.fixture(params=["lists", "one array"])
def search(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both ways of searching the groups: on lists (few groups) and in one array (many)."""
    if request.param == "one array":
        monkeypatch.setattr(_baskets, "LISTED_GROUPS", 0)


@pytest.mark.usefixtures("search")
def test_every_layout_sums_as_a_pass_over_every_basket() -> None:
    shared = ([0, 10, 20, 35], [10, 20, 35, 50], [1, 2, 3, 4])
    layouts = [
        shared,
        shared,  # same boundaries: one group
        ([0, 25], [25, 50], [5, 6]),  # a second group
        ([0, 10, 40], [10, 40, 50], [7, 8, -1]),  # normal baskets, then an embedded one
        ([0], [50], [-1]),  # embedded only
        ([20, 0], [50, 20], [9, 10]),  # out of order: tested one by one
        ([5, 5, 8], [5, 8, 30], [11, 12, 13]),  # an empty basket in the chain
        ([0, 30, 20], [30, 20, 50], [14, 15, 16]),  # joined, but one ends before it starts
        ([-10, -3], [-3, 5], [17, 18]),  # entries below 0
        ([], [], []),  # no basket
    ]
    starts, stops, compressed, seeks, spans = branch_baskets(layouts)
    sums = RangeBytes(starts, stops, compressed, seeks, spans)
    for a in range(-13, 54):
        for b in range(a - 2, 56):
            assert sums(a, b) == direct(starts, stops, compressed, a, b), (a, b)


@pytest.mark.usefixtures("search")
def test_keys_that_would_overflow_fall_back_to_testing_each_basket() -> None:
    top = 1 << 61
    layouts = [([0, top // 2], [top // 2, top], [1, 2]), ([0], [top], [3])]
    starts, stops, compressed, seeks, spans = branch_baskets(layouts)
    sums = RangeBytes(starts, stops, compressed, seeks, spans)
    for a, b in ((0, 1), (top // 2, top), (top - 1, top + 5), (-5, 0)):
        assert sums(a, b) == direct(starts, stops, compressed, a, b)


@pytest.mark.parametrize(
    "name", ["nano_dy.root", "nano_dimuon.root", "nanoAOD_2015_CMS_Open_Data_ttbar.root"]
)
@pytest.mark.usefixtures("search")
def test_real_trees_sum_as_a_pass_over_every_basket(cms_data: Path, name: str) -> None:
    with uproot.open(cms_data / name) as file:
        index = TreeIndex(file["Events"])
        entries = file["Events"].num_entries
    edges = sorted({0, entries, *index.starts.tolist(), *index.stops.tolist()})
    for a in edges:
        for b in (a - 1, a, a + 1, a + 7, entries):
            got = index.chunk_baskets(["nMuon"], a, b)[1]
            assert got == direct(index.starts, index.stops, index.compressed, a, b)


def test_generated_tree_with_shared_boundaries_sums_exactly(tmp_path: Path) -> None:
    from roastcoffea.demo.nanoaod import generate

    (path,) = generate(tmp_path, 9000, 1, basket_events=2000, processes=1)
    with uproot.open(path) as file:
        index = TreeIndex(file["Events"])
    for a in range(0, 9001, 250):
        for b in (a + 1, a + 999, a + 2000, 9000):
            got = index.chunk_baskets(["Jet_pt", "nJet"], a, b)[1]
            assert got == direct(index.starts, index.stops, index.compressed, a, b)
