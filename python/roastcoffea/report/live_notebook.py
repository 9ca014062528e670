"""The live view in a Jupyter notebook: one output updated in place while a collector runs.

The same figures as the terminal panel (:class:`~roastcoffea.report.live.LiveView`,
whose running totals and rates it reuses), drawn as a small HTML table with
IPython's ``display(..., display_id=True)`` and updated from a background
thread. Updating a display needs no widget library, and the last update stays
in the saved notebook as a plain HTML output: the run's final state.
"""

from __future__ import annotations

import html
import logging
import sys
import threading
from collections.abc import Callable
from typing import Any

from roastcoffea.report.live import REFRESH_PER_SECOND, LiveView, count_text, dominant_phase
from roastcoffea.units import format_bytes, format_gbps, format_rate, format_time

logger = logging.getLogger(__name__)


def in_notebook() -> bool:
    """Whether this runs in a kernel whose front end shows rich output, updatable in place.

    Decided by capability, not by the shell's class name: an IPython shell
    with a kernel attached (Jupyter, JupyterLab, VS Code, Colab and other
    ipykernel-based front ends) renders HTML outputs and updates a display by
    its id. A terminal IPython has no kernel.
    """
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    return getattr(shell, "kernel", None) is not None


class NotebookLiveView(LiveView):
    """:class:`LiveView` drawn as an HTML output of the running cell."""

    def __init__(self, feed: Any, title: str = "roastcoffea") -> None:
        super().__init__(feed, title)
        self._handle: Any = None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def _start_drawing(self) -> None:
        from IPython.display import HTML, display

        self._handle = display(HTML(self.render_html()), display_id=True)
        self._thread = threading.Thread(target=self._refresh, name="roastcoffea-live", daemon=True)
        self._thread.start()

    def _stop_drawing(self) -> None:
        """Stop updating, then draw the final state once more."""
        self._stopping.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout=5)
        self._update(final=True)

    def _refresh(self) -> None:
        while not self._stopping.wait(1 / REFRESH_PER_SECOND):
            self._update()

    def _update(self, final: bool = False) -> None:
        if self._handle is None:
            return
        try:
            from IPython.display import HTML

            self._handle.update(HTML(self.render_html(final)))
        except Exception:
            logger.debug("roastcoffea: notebook live view update failed", exc_info=True)

    def render_html(self, final: bool = False) -> str:
        """The view as an HTML table (escaped text only)."""
        s = self.state()
        elapsed = s["elapsed"]

        def rate(value: float | None, fmt: Callable[[float], str]) -> str:
            return "waiting for data" if value is None else fmt(value)

        tasks = f"{s['tasks']:,}" + (f" ({s['erred']} erred)" if s["erred"] else "")
        memory = "N/A" if s["memory_bytes"] is None else format_bytes(s["memory_bytes"])
        rows = [
            ("Event rate", rate(s["event_rate_hz"], format_rate), "Workers", str(s["workers"])),
            ("Data rate", rate(s["gbps"], format_gbps), "Memory", memory),
            ("Events", count_text(s["events"]), "Tasks done", tasks),
            ("Chunks", f"{s['chunks']:,}", "Elapsed", format_time(elapsed)),
            ("Dominant phase", dominant_phase(s["dominant_phase"]), "", ""),
        ]
        cells = "".join(
            "<tr>"
            + "".join(
                f'<th style="text-align:left;padding:2px 12px 2px 0">{html.escape(a)}</th>'
                f'<td style="text-align:right;padding:2px 18px 2px 0">{html.escape(b)}</td>'
                for a, b in ((r[0], r[1]), (r[2], r[3]))
            )
            + "</tr>"
            for r in rows
        )
        state = "running"
        if final:
            state = (
                "finished: the whole block, from the final flush"
                if self.settled
                else "finished: the final flush gave no figures; the last live ones are shown"
            )
        return (
            '<div class="roastcoffea-live" style="font-family:sans-serif;font-size:13px">'
            f"<strong>{html.escape(self._title)}</strong> <em>({state})</em>"
            f"<table>{cells}</table></div>"
        )
