"""Human-readable output: the summary tables and the live view.

:func:`~roastcoffea.report.summary.print_summary` prints a metrics dictionary
as rich tables; :class:`~roastcoffea.report.live.LiveView` draws the plugin's
live stream while a collector runs.
"""

from roastcoffea.report.live import LiveView
from roastcoffea.report.summary import print_summary, summary_tables

__all__ = ["LiveView", "print_summary", "summary_tables"]
