"""What a heartbeat payload costs a worker as its digests_total grows with the cluster's age.

What it measures: ``DigestTracker.payload`` on a ``digests_total`` of N keys (N = 500,
5,000 and 50,000: each span of a run adds about 36 keys to every worker, so 50,000 is a
worker that has served about 1,400 runs), of which 50 change between two heartbeats
(the keys of one running span, as while a processor runs), plus 20 keys of contexts
without a span (Dask's ``gather-dep``, ``get-data``, three-label keys) that are read every
time. Two trackers, side by side in the same run, alternating blocks of 100 payloads:

- ``scan``: ``payload(digests_total)``, every key read (how the worker plugin worked until
  2026-11-26);
- ``follow``: ``payload(digests_total, changed)`` with ``changed`` the span-keyed digests of
  the heartbeat, as Dask's spans extension holds them (``followed=CONTEXTS_WITH_SPAN_ID``).

Each payload's digests are checked equal between the two. Per N: the median µs per payload
of each (time.perf_counter) and their ratio. Nothing is asserted.

Run: ``.venv/bin/python bench/tracker_growth.py``.
"""

from __future__ import annotations

import argparse
import time

from common import median, table
from distributed.spans import CONTEXTS_WITH_SPAN_ID

from roastcoffea._native import DigestTracker, decode_payload

#: Keys each span adds, keys changing per heartbeat, keys without a span.
KEYS_PER_SPAN, CHANGING, UNSPANNED = 50, 50, 20


def digests(keys: int) -> dict:
    """A digests_total of ``keys`` span keys, the last span's changing, and the unspanned."""
    d: dict = {}
    for span in range(keys // KEYS_PER_SPAN):
        for activity in range(KEYS_PER_SPAN):
            key = ("execute", f"span-{span:08x}", "process-coffea", f"act-{activity}", "seconds")
            d[key] = 1.0
    for i in range(UNSPANNED):
        key = ("gather-dep", f"act-{i}", "seconds") if i % 2 else ("get-data", f"a{i}", "bytes")
        d[key] = 1.0
    return d


def block(tracker: DigestTracker, d: dict, follow: bool, payloads: int) -> list[float]:
    """Seconds of each of ``payloads`` payloads, the last span's keys changed before each."""
    changing = [k for k in d if k[0] == "execute"][-CHANGING:]
    seconds = []
    for _ in range(payloads):
        changed = {}
        for key in changing:
            d[key] += 1.0
            changed[key] = 1.0
        t0 = time.perf_counter()
        tracker.payload(d, changed if follow else None)
        seconds.append(time.perf_counter() - t0)
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=10, help="blocks of 100 payloads (10)")
    args = parser.parse_args(argv)
    rows = []
    for keys in (500, 5_000, 50_000):
        owned = {False: digests(keys), True: digests(keys)}  # each tracker its own worker
        scan = DigestTracker("inc", window=4)
        follow = DigestTracker("inc", window=4, followed=CONTEXTS_WITH_SPAN_ID)
        times: dict[bool, list[float]] = {False: [], True: []}
        for i in range(args.blocks):
            for following in (bool(i % 2), not i % 2):
                tracker = follow if following else scan
                times[following] += block(tracker, owned[following], following, 100)
        scanned = decode_payload(scan.payload(owned[False]))["digests"]
        followed = decode_payload(follow.payload(owned[True], {}))["digests"]
        same = "yes" if scanned == followed else "NO"
        us = {f: 1e6 * median(t) for f, t in times.items()}
        ratio = f"{us[False] / us[True]:.0f}x"
        rows.append([f"{len(owned[False]):,}", f"{us[False]:.1f}", f"{us[True]:.1f}", ratio, same])
    print(
        f"tracker growth: {CHANGING} keys changing per heartbeat, {UNSPANNED} without a span, "
        f"{args.blocks} blocks of 100 payloads per tracker"
    )
    print(table(["keys", "scan, µs", "follow, µs", "scan / follow", "same digests"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
