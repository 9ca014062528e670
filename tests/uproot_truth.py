"""What uproot itself says a run read: the independent figures byte counts are checked against."""

from __future__ import annotations

import uproot


def uproot_distinct_baskets(path: str, branches: set[str], ranges: list[tuple[int, int]]) -> dict:
    """What uproot says the branches' baskets overlapping the ranges hold, each basket once.

    An embedded basket's size is counted from its interpreted data (key, data
    and, for a jagged branch, the counted offsets array ROOT writes after it).
    """
    tree = uproot.open(path)["Events"]
    found = {"baskets": 0, "compressed": 0, "uncompressed": 0}
    for name in branches:
        branch = tree[name]
        normal = branch.num_baskets - len(branch.embedded_baskets)
        for number in range(branch.num_baskets):
            start, stop = branch.basket_entry_start_stop(number)
            if not any(start < hi and stop > lo for lo, hi in ranges):
                continue
            found["baskets"] += 1
            found["compressed"] += branch.basket_compressed_bytes(number)
            if number < normal:
                found["uncompressed"] += branch.basket_uncompressed_bytes(number)
            else:
                basket = branch.embedded_baskets[number - normal]
                offsets = basket.byte_offsets
                jagged = 0 if offsets is None else 4 * (len(offsets) + 1)
                found["uncompressed"] += basket.member("fKeylen") + len(basket.data) + jagged
    found["tree_compressed"] = tree.compressed_bytes
    return found
