"""The plugin pair installed when a scheduler starts: ``dask scheduler --preload roastcoffea``.

Dask imports a preload module when the scheduler starts and calls its
``dask_setup`` with the scheduler; this one registers :class:`RoastPlugin` as a
client's ``register_plugin`` would, with its settings from ``dask.config``
(``roastcoffea.*``). The worker plugin follows on every worker, also those that
join later; a ``MetricsCollector`` on any client then finds the pair and uses
it. As a worker's preload it does nothing: the scheduler's plugin reaches the
workers itself.

The same with Dask's configuration, e.g. for dask-jobqueue::

    distributed:
      scheduler:
        preload: [roastcoffea]

A ``--preload`` on the command line replaces that setting: dask-gateway gives one of its
own, so there the preload goes on the scheduler's command (docs/guide.md, "On dask-gateway").
"""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger(__name__)


async def dask_setup(server: Any) -> None:
    """Add the plugin pair to a starting scheduler (Dask calls this)."""
    from distributed import Scheduler

    from roastcoffea.plugin.scheduler.dashboard import page_url
    from roastcoffea.plugin.scheduler.plugin import RoastPlugin

    _log_with_dask()
    if not isinstance(server, Scheduler):
        logger.info("roastcoffea: preloaded on a %s: nothing to do", type(server).__name__)
        return
    # Added, not registered: the scheduler starts its plugins right after its preloads,
    # and registering would start this one a second time.
    server.add_plugin(RoastPlugin(), idempotent=True)
    logger.info("roastcoffea: RoastPlugin added by preload; its page: %s", page_url(server))


def _log_with_dask() -> None:
    """Write roastcoffea's log where the server's is, as Dask writes it, at INFO.

    Dask sets up its own loggers only; without this, the page's address and the plugin's
    warnings would not reach the scheduler's log. A logging set up by the user is kept.
    """
    ours = logging.getLogger("roastcoffea")
    if ours.handlers or ours.level != logging.NOTSET:
        return
    ours.setLevel(logging.INFO)
    for handler in logging.getLogger("distributed").handlers:
        ours.addHandler(handler)
    ours.propagate = not ours.handlers
