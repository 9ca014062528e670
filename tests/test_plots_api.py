"""The plot API: roastcoffea 0.1.2's 21 functions with their signatures, and ours."""

from __future__ import annotations

import subprocess
import sys

import pytest
from legacy_plots import LEGACY

import roastcoffea
from roastcoffea import plots

NEW = (
    "plot_fine_metrics_heatmap",
    "plot_processor_overhead_breakdown",
    "plot_prefix_timeline",
    "plot_dataset_runtimes",
    "plot_measurement_comparison",
    "plot_scaling_study",
)


def test_every_plot_is_exported_here_and_at_the_top_level() -> None:
    assert len(LEGACY) == 21
    for name in (*LEGACY, *NEW):
        assert name in plots.__all__
        assert getattr(roastcoffea, name) is getattr(plots, name)
        assert getattr(plots, name).__doc__
    assert roastcoffea.plots is plots
    with pytest.raises(AttributeError, match="plot_nothing"):
        roastcoffea.plot_nothing  # noqa: B018


def test_importing_roastcoffea_does_not_import_matplotlib() -> None:
    # Workers import roastcoffea for the plugin and the instrumentation only.
    code = "import sys, roastcoffea; print('matplotlib' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "False", result.stderr
