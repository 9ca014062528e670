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


def test_a_figure_that_needs_a_key_checks_it_before_drawing_and_documents_it() -> None:
    from roastcoffea.plots._common import figure, new_figure

    drawn: list[object] = []

    @figure(figsize=(2, 2), title="x", needs="rates")
    def plot_rates(
        metrics: object, figsize: tuple[float, float], title: str
    ) -> tuple[object, object]:
        """Plot the rates. Unit: Hz."""
        drawn.append(metrics)
        return new_figure(figsize)

    for metrics in (None, {}, {"rates": []}):
        with pytest.raises(ValueError, match="rates"):
            plot_rates(metrics)
    assert drawn == []
    plot_rates(metrics={"rates": [1.0]})
    assert drawn == [{"rates": [1.0]}]
    assert "Unit: Hz.\n\nParameters\n----------\nmetrics : mapping\n" in plot_rates.__doc__
    assert plot_rates.__doc__.endswith(
        "Raises\n------\nValueError\n    If ``metrics`` is None or has no ``rates`` to plot.\n"
    )
