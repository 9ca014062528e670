"""The Prometheus export's label bounds, on plain data."""

from __future__ import annotations

from roastcoffea.plugin.scheduler.prometheus import FOLDED, fold_labels


def test_prefixes_beyond_the_bound_fold_into_one_label_keeping_every_second() -> None:
    totals = {
        ("big", "thread-cpu", "seconds"): 10.0,
        ("mid", "thread-cpu", "seconds"): 5.0,
        ("small", "thread-cpu", "seconds"): 1.0,
        ("tiny", "thread-cpu", "seconds"): 0.5,
        ("small", "disk-read", "bytes"): 100.0,
    }
    folded, count = fold_labels(totals, 0, 2)
    assert count == 2
    assert folded == {
        ("big", "thread-cpu", "seconds"): 10.0,
        ("mid", "thread-cpu", "seconds"): 5.0,
        (FOLDED, "thread-cpu", "seconds"): 1.5,
        (FOLDED, "disk-read", "bytes"): 100.0,
    }
    assert fold_labels(totals, 0, 10) == (totals, 0)


def in_seconds(by_prefix_activity: dict[tuple[str, str], float]) -> dict[tuple, float]:
    return {
        (prefix, activity, "seconds"): v for (prefix, activity), v in by_prefix_activity.items()
    }


def test_activities_beyond_the_bound_fold_by_their_total() -> None:
    # The export folds each unit's family on its own: seconds, then bytes.
    kept = {("p", "thread-cpu"): 3.0, ("q", "thread-cpu"): 1.0, ("p", "user-act-1"): 2.0}
    seconds = in_seconds({**kept, ("p", "user-act-2"): 0.5})
    assert fold_labels(seconds, 1, 2) == (in_seconds({**kept, ("p", FOLDED): 0.5}), 1)
    nbytes = {("p", "disk-read", "bytes"): 100.0, ("p", "user-bytes", "bytes"): 5.0}
    assert fold_labels(nbytes, 1, 1) == (
        {("p", "disk-read", "bytes"): 100.0, ("p", FOLDED, "bytes"): 5.0},
        1,
    )
