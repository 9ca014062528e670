"""A chunk's in-range bytes on trees of NanoAOD's size: grouped boundaries against a pass.

What it measures: ``bytes_read_percent`` needs, per chunk, the compressed bytes of every
basket of the tree that overlaps the chunk's entry range. :class:`RangeBytes` groups the
branches by their basket boundaries and searches each group; the way before it tested
every basket of the tree. Both run here on the same trees, side by side in each round:
the demo's (97 branches, 10 baskets each) and trees of NanoAOD's 1,500 branches with 100
and 400 baskets per branch, each with every branch on the same boundaries (one group)
and with them spread over 40 layouts (the many-groups path). Each round times both ways
on 200 random entry ranges, in alternating order, with ``time.perf_counter``; the figures
are medians over rounds of µs per range and of the ratio pass / grouped. Both ways must
give the same bytes for every range (checked). Nothing is asserted on a timing.
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

import numpy
from common import machine, median, table

from roastcoffea.instrument._baskets import RangeBytes

ENTRIES = 1_000_000
RANGES = 200
#: (branches, baskets per branch, boundary layouts): the demo's tree, then NanoAOD's size.
SHAPES = ((97, 10, 1), (1500, 100, 1), (1500, 100, 40), (1500, 400, 1), (1500, 400, 40))


def tree(branches: int, baskets: int, layouts: int) -> tuple[numpy.ndarray, ...]:
    """(starts, stops, compressed, seeks) and branch spans: ``layouts`` boundary sets."""
    draw = numpy.random.default_rng(7)
    bounds = [
        numpy.unique(numpy.concatenate(([0, ENTRIES], draw.integers(1, ENTRIES, baskets - 1))))
        for _ in range(layouts)
    ]
    starts, stops, spans, position = [], [], [], 0
    for branch in range(branches):
        edges = bounds[branch % layouts]
        starts.append(edges[:-1])
        stops.append(edges[1:])
        spans.append((position, position + len(edges) - 1))
        position += len(edges) - 1
    starts_all, stops_all = numpy.concatenate(starts), numpy.concatenate(stops)
    compressed = draw.integers(1_000, 60_000, position)
    seeks = numpy.arange(position, dtype=numpy.int64) * 60_000
    return starts_all, stops_all, compressed, seeks, spans


def measure(
    shape: tuple[int, int, int], rounds: int, draw: random.Random
) -> tuple[int, list[float], list[float]]:
    """Baskets of the tree, and µs per range of the pass and of the grouped sums, per round."""
    starts, stops, compressed, seeks, spans = tree(*shape)
    grouped = RangeBytes(starts, stops, compressed, seeks, spans)
    ranges = []
    for _ in range(RANGES):
        start = draw.randrange(ENTRIES)
        ranges.append((start, start + draw.choice((1_000, 100_000))))

    def run_pass() -> list[int]:
        return [int(compressed[(starts < b) & (stops > a)].sum()) for a, b in ranges]

    def run_grouped() -> list[int]:
        return [grouped(a, b) for a, b in ranges]

    if run_pass() != run_grouped():
        raise RuntimeError(f"the two ways disagree on the tree {shape}")
    times: dict[Any, list[float]] = {run_pass: [], run_grouped: []}
    for round_ in range(rounds):
        for way in (run_pass, run_grouped) if round_ % 2 else (run_grouped, run_pass):
            begin = time.perf_counter()
            way()
            times[way].append((time.perf_counter() - begin) / RANGES * 1e6)
    return len(starts), times[run_pass], times[run_grouped]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30, help="rounds per tree (30)")
    parser.add_argument("--quick", action="store_true", help="5 rounds per tree")
    args = parser.parse_args(argv)
    rounds = 5 if args.quick else args.rounds
    draw = random.Random(11)
    rows = []
    for shape in SHAPES:
        baskets, passes, groups = measure(shape, rounds, draw)
        ratios = [p / g for p, g in zip(passes, groups, strict=True)]
        branches, per_branch, layouts = shape
        rows.append(
            [
                f"{branches} x {per_branch}, {layouts} layout{'s' if layouts > 1 else ''}",
                f"{baskets:,}",
                f"{median(passes):.1f}",
                f"{median(groups):.1f}",
                f"{median(ratios):.1f}",
            ]
        )
    print(f"range bytes: {rounds} rounds of {RANGES} ranges per tree; {machine()}")
    headers = ["branches x baskets", "baskets", "pass µs", "grouped µs", "pass / grouped"]
    print(table(headers, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
