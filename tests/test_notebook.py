"""In a real Jupyter kernel: the live view updates one output in place; results show as HTML."""

from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient

#: The kernel starts its own LocalCluster.
pytestmark = pytest.mark.cluster

#: The cell: a collector around tasks. The view counts what the scheduler's ticks deliver
#: from its first delta on, so the cell waits for events, never for time: the first delta
#: before the tasks, then the view's count of all of them.
LIVE_CELL = """
import time
from distributed import Client, LocalCluster
from roastcoffea import MetricsCollector

def wait_for(done):
    deadline = time.monotonic() + 120
    while not done() and time.monotonic() < deadline:
        time.sleep(0.05)

cluster = LocalCluster(
    n_workers=1, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0"
)
client = Client(cluster)
with MetricsCollector(client, worker_tracking_interval=0.2) as mc:
    wait_for(lambda: mc.live_view.deltas > 0)
    client.gather(client.map(lambda x: time.sleep(0.05) or x, range(8)))
    wait_for(lambda: mc.live_view.state()["tasks"] >= 8)
print(type(mc.live_view).__name__, mc.live_view.state()["tasks"], mc.live_view.off_reason)
"""

REPR_CELL = """
mc.set_coffea_report({"entries": 0, "bytesread": 0, "processtime": 0.0, "chunks": 0})
mc
"""

#: A block shorter than a scheduler tick: its display still ends on its figures.
SHORT_CELL = """
with MetricsCollector(client) as short:
    client.gather(client.map(lambda x: x + 1, range(4)))
"""

CLOSE_CELL = "client.close(); cluster.close()"


def run_notebook(*cells: str) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(notebook, timeout=300, kernel_name="python3").execute()
    return notebook


def test_live_view_and_rich_display_in_a_kernel() -> None:
    notebook = run_notebook(LIVE_CELL, REPR_CELL, SHORT_CELL, CLOSE_CELL)
    live, shown, short, _ = notebook.cells
    displays = [o for o in live.outputs if o.output_type == "display_data"]
    assert len(displays) == 1  # one output, updated in place
    final = displays[0].data["text/html"]
    assert "roastcoffea-live" in final and "(finished: the whole block" in final
    assert "<th" in final and "Tasks done" in final and ">8<" in final
    (short_display,) = [o for o in short.outputs if o.output_type == "display_data"]
    final = short_display.data["text/html"]
    assert "(finished: the whole block, from the final flush)" in final
    assert "Tasks done" in final and ">4<" in final and "No live data" not in final
    printed = "".join(o.text for o in live.outputs if o.output_type == "stream")
    assert printed.split() == ["NotebookLiveView", "8", "None"]
    result = next(o for o in shown.outputs if o.output_type == "execute_result")
    assert "roastcoffea-summary" in result.data["text/html"]
