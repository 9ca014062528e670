"""What the scheduler, worker and client halves of the plugin say to each other.

A leaf module: the names of the plugin, its handlers, event topics and task
annotations, imported by every half and importing nothing of roastcoffea.
"""

from __future__ import annotations

#: Name of both plugins, and of the worker's metric in ``worker.metrics`` /
#: ``ws.metrics`` that carries its heartbeat payload.
PLUGIN_NAME = "roastcoffea"

#: Scheduler RPC handlers (:class:`~roastcoffea.plugin.RoastPlugin`).
SNAPSHOT_HANDLER = "roastcoffea_snapshot"
FLUSH_HANDLER = "roastcoffea_flush"
STOP_HANDLER = "roastcoffea_stop"
#: Worker RPC handler that answers with the worker's full payload.
WORKER_STATE_HANDLER = "roastcoffea_worker_state"

#: Event topic on which workers send their records (and each task's phase digests).
RECORDS_TOPIC = "roastcoffea-records"
#: Event topic of a worker's full state sent as it closes: what its last heartbeat missed.
FINAL_STATE_TOPIC = "roastcoffea-final-state"
#: Event topic of the live stream the scheduler publishes while a client listens.
LIVE_TOPIC = PLUGIN_NAME

#: Task annotation a collector puts on every task of its block: its span id
#: (roastcoffea.plugin.scheduler.runs).
RUN_ANNOTATION = "roastcoffea-run"
#: Task annotation the scheduler puts on a task it placed in its run's span: that span id.
PLACED_ANNOTATION = "roastcoffea-placed"

#: Key of the answer of a worker that cannot load roastcoffea.
UNMONITORED = "unmonitored"
