"""Builders of plain metrics inputs for the test_metrics_* modules (this module has no tests).

The snapshot layout is the one of docs/architecture.md ("The snapshot as
Python data"); times are scheduler-clock seconds around :data:`T0`.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from roastcoffea import _native
from roastcoffea.metrics import MetricsInputs, compute_metrics

#: The collector's span, and a span of someone else's work on the same cluster.
SPAN = "span-mine"

#: The collector's window starts here (scheduler clock).
T0 = 1_700_000_000.0

#: Series columns in roast_column order.
COLUMNS = _native.SERIES_COLUMNS

W1 = "tcp://10.0.0.1:1234"
W2 = "tcp://10.0.0.2:1234"


def span_digests(rows: dict[tuple[str, str, str, str], float]) -> dict[tuple, float]:
    """Digest rows of the collector's span in the ``execute`` context.

    ``rows`` maps ``(worker, prefix, activity, unit)`` to a value; the
    result's keys are the snapshot's ``(worker, context, span, prefix,
    activity, unit)``.
    """
    return {(w, "execute", SPAN, p, a, u): v for (w, p, a, u), v in rows.items()}


def make_snapshot(
    digests: dict[tuple[str, str, str, str, str, str], float] | None = None,
    tasks: list[dict[str, Any]] | None = None,
    series: dict[str, dict[str, Any]] | None = None,
    workers: dict[str, dict[str, Any]] | None = None,
    counters: dict[str, Any] | None = None,
    errors: dict[str, int] | None = None,
) -> dict[str, Any]:
    """A snapshot dict with the given parts and empty (but well-formed) others."""
    return {
        "version": 1,
        "taken_at": T0 + 100,
        "started": T0 - 100,
        "workers": workers if workers is not None else {},
        "tasks": tasks or [],
        "prefixes": {},
        "worker_tasks": {},
        "span_tasks": {},
        "digests": digests or {},
        "spans": {SPAN: {"parent": None, "name": ("roastcoffea",)}},
        "records": [],
        "errors": errors or {},
        "series": series or {},
        "counters": counters or counters_report(),
    }


def counters_report(**overrides: Any) -> dict[str, Any]:
    """The snapshot's ``counters`` with plausible values."""
    counters = {
        "events": 600,
        "dropped_events": 0,
        "hook_calls": 600,
        "hook_errors": 0,
        "hook_ns_per_call": 1500.0,
        "payloads": 20,
        "payload_bytes": 4000,
        "payload_errors": 0,
        "records": 10,
        "records_dropped": 0,
        "rows_refused": 0,
        "series_bytes": 2000,
        "series_cap_bytes": 64 << 20,
        "series_samples": 40,
        "series_folds": 0,
        "strings": 30,
        "intern_overflows": 0,
        "prefixes_folded": 0,
    }
    counters.update(overrides)
    return counters


def worker_info(removed: float | None = None, gaps: int = 0, restarts: int = 0) -> dict[str, Any]:
    """One entry of ``snapshot["workers"]``."""
    return {
        "name": "w",
        "incarnation": "Worker-x",
        "restarts": restarts,
        "added": T0 - 50,
        "removed": removed,
        "payloads": 10,
        "payload_bytes": 2000,
        "last_seq": 10,
        "gaps": gaps,
        "flushes": 1,
    }


def point(t: float, **values: float) -> tuple[float, float, int, dict[str, tuple[float, ...]]]:
    """A single sample at ``t``: unnamed columns are 0, nthreads defaults to 1."""
    row = {name: 0.0 for name in COLUMNS}
    row["nthreads"] = 1.0
    row.update(values)
    return (t, t, 1, {name: (v, v, v) for name, v in row.items()})


def bucket(
    t_first: float, t_last: float, count: int, **values: tuple[float, float, float]
) -> tuple[float, float, int, dict[str, tuple[float, ...]]]:
    """A bucket of ``count`` folded samples; ``values[name] = (mean, min, max)``."""
    row: dict[str, tuple[float, ...]] = {name: (0.0, 0.0, 0.0) for name in COLUMNS}
    row["nthreads"] = (1.0, 1.0, 1.0)
    row.update(values)
    return (t_first, t_last, count, row)


def make_series(points: list[tuple[float, float, int, dict[str, tuple[float, ...]]]]) -> dict:
    """One worker's ``snapshot["series"]`` entry from :func:`point`/:func:`bucket` tuples."""
    return {
        "t_first": [p[0] for p in points],
        "t_last": [p[1] for p in points],
        "count": [p[2] for p in points],
        "columns": {
            name: {
                "mean": [p[3][name][0] for p in points],
                "min": [p[3][name][1] for p in points],
                "max": [p[3][name][2] for p in points],
            }
            for name in COLUMNS
        },
    }


def task_row(worker: str, prefix: str, span: str = SPAN, **values: Any) -> dict[str, Any]:
    """One ``snapshot["tasks"]`` row."""
    row = {
        "worker": worker,
        "span": span,
        "prefix": prefix,
        "transitions": 0,
        "tasks": 0,
        "erred": 0,
        "compute_seconds": 0.0,
        "transfer_seconds": 0.0,
        "output_bytes": 0,
        "first_start": 0.0,
        "last_stop": 0.0,
    }
    row.update(values)
    return row


def chunk(**overrides: Any) -> dict[str, Any]:
    """A chunk record with every field measured (docs/architecture.md record format)."""
    record: dict[str, Any] = {
        "kind": "chunk",
        "v": 1,
        "task_key": "MyProc-abc",
        "prefix": "MyProc",
        "worker": W1,
        "span": SPAN,
        "dataset": "dy",
        "file": "/data/a.root",
        "uuid": "00ff",
        "treename": "Events",
        "entry_start": 0,
        "entry_stop": 1000,
        "num_events": 1000,
        "t_start": T0 + 1.0,
        "t_end": T0 + 3.0,
        "duration": 2.0,
        "process_cpu_seconds": 1.5,
        "task_start": T0 + 0.5,
        "task_end": T0 + 3.5,
        "task_duration": 3.0,
        "mem_before_mib": 100.0,
        "mem_after_mib": 110.0,
        "mem_delta_mib": 10.0,
        "bytes_read": 5000,
        "bytes_read_task": 8000,
        "instrument_bytes": 32,
        "instrument_seconds": 0.002,
        "instrument_cpu_seconds": 0.0015,
        "accessed_branches": ["Jet_pt", "Jet_eta"],
        "num_branches_accessed": 2,
        "accessed_bytes": 4000,
        "accessed_uncompressed_bytes": 16000,
        "branches_read_percent": 20.0,
        "bytes_read_percent": 4.0,
        "file_metadata": {
            "filename": "/data/a.root",
            "compression_ratio": 0.25,
            "total_branches": 10,
            "total_tree_bytes": 100_000,
        },
        "timing": {},
        "memory": {},
        "bytes": {},
        "custom": {},
        "error": None,
        "timestamp": T0 + 3.0,
    }
    record.update(overrides)
    if "accessed_baskets" not in overrides:
        record["accessed_baskets"] = own_baskets(record)
    return record


_BASKET_IDS = itertools.count(1000)


def own_baskets(record: dict[str, Any]) -> dict[str, list[int]] | None:
    """Baskets no other chunk shares that add up to the record's accessed sizes.

    One stored basket, plus one embedded basket when ``accessed_embedded_bytes``
    is set; None when a size is unmeasured.
    """
    compressed = record.get("accessed_bytes")
    uncompressed = record.get("accessed_uncompressed_bytes")
    if not isinstance(compressed, int) or not isinstance(uncompressed, int):
        return None
    embedded = record.get("accessed_embedded_bytes") or 0
    sizes = [(compressed, uncompressed - embedded)] + ([(0, embedded)] if embedded else [])
    return baskets(*((next(_BASKET_IDS), c, u) for c, u in sizes))


def baskets(*triples: tuple[int, int, int]) -> dict[str, list[int]]:
    """An ``accessed_baskets`` field from (id, compressed, uncompressed) triples."""
    return {
        "id": [t[0] for t in triples],
        "compressed": [t[1] for t in triples],
        "uncompressed": [t[2] for t in triples],
    }


def make_inputs(**overrides: Any) -> MetricsInputs:
    """MetricsInputs for a 10 s window from :data:`T0` (wall time 10 s) and an empty snapshot."""
    fields: dict[str, Any] = {
        "snapshot": make_snapshot(),
        "t_start": T0,
        "t_end": T0 + 10.0,
        "wall_time": 10.0,
    }
    fields.update(overrides)
    return MetricsInputs(**fields)


def metrics_of(**overrides: Any) -> dict[str, Any]:
    """compute_metrics of :func:`make_inputs` with ``overrides``."""
    return compute_metrics(make_inputs(**overrides))


def processor_metrics(default: dict[str, Any], /, **overrides: Any) -> dict[str, Any]:
    """:func:`metrics_of` of the snapshot ``default``, the processor ``MyProc``; overrides win."""
    return metrics_of(**{"snapshot": default, "detected_prefixes": {"MyProc"}, **overrides})


def close(a: float, b: float) -> bool:
    """Equal to a relative 1e-12 (formulas evaluated in another order)."""
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)
