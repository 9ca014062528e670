"""A measurement's tables as columns: pandas and Arrow views of the metrics dictionary.

Three tables, one row each per:

``"chunks"``
    chunk record (``metrics["raw_chunk_metrics"]``); dict fields are spread one
    level into columns (``timing.jets``, ``accessed_baskets.id``; a row where the
    dict is None has them null).
``"phases"``
    task measured by the phase clock (``metrics["raw_phase_records"]``), with
    ``wall.<phase>`` and ``cpu.<phase>`` columns.
``"workers"``
    worker of the run (``metrics["per_worker"]``), with its phases'
    wall seconds (``phase.<phase>``) when measured.

pandas and pyarrow come with the ``coffea`` and ``plot`` extras. The chunk records'
Parquet file of a saved measurement is :mod:`roastcoffea.formats.parquet`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

Table = Literal["chunks", "phases", "workers"]


def _rows(metrics: Mapping[str, Any], table: Table) -> list[dict[str, Any]]:
    if table == "chunks":
        return [dict(r) for r in metrics.get("raw_chunk_metrics") or ()]
    if table == "phases":
        return [dict(r) for r in metrics.get("raw_phase_records") or ()]
    if table == "workers":
        phases = metrics.get("phase_per_worker") or {}
        return [
            {"worker": worker, **row, "phase": dict(phases.get(worker) or {})}
            for worker, row in (metrics.get("per_worker") or {}).items()
        ]
    raise ValueError(f"no table {table!r}: choose 'chunks', 'phases' or 'workers'")


def to_pandas(metrics: Mapping[str, Any], table: Table = "chunks") -> pd.DataFrame:
    """One of the measurement's tables as a pandas DataFrame.

    Parameters
    ----------
    metrics : mapping
        A metrics dictionary, live or loaded.
    table : {"chunks", "phases", "workers"}
        Which table (see the module's description).

    Returns
    -------
    pandas.DataFrame
        One row per chunk, measured task or worker; no row without data.
    """
    import pandas as pd

    rows = _rows(metrics, table)
    if not rows:
        return pd.DataFrame()
    frame = pd.json_normalize(rows, max_level=1)
    # A dict field that is None in some rows leaves a column of its own beside the
    # spread ones, null wherever it was a dict: its nulls are the spread columns' too.
    spread = {c.split(".", 1)[0] for c in frame.columns if "." in c}
    shadows = [c for c in spread if c in frame.columns and frame[c].isna().all()]
    return frame.drop(columns=shadows)


def to_arrow(metrics: Mapping[str, Any], table: Table = "chunks") -> pa.Table:
    """One of the measurement's tables as a pyarrow Table (columns as :func:`to_pandas`)."""
    import pyarrow as pa

    return pa.Table.from_pandas(to_pandas(metrics, table), preserve_index=False)
