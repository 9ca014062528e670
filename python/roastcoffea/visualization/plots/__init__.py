"""The figures under roastcoffea 0.1.2's module path, ``roastcoffea.visualization.plots``.

Its submodules (``chunks``, ``cpu``, ``io``, ``memory``, ``per_task``,
``scaling``, ``throughput``, ``workers``) are the modules of
:mod:`roastcoffea.plots` themselves, registered under the old names, so
``from roastcoffea.visualization.plots.per_task import extract_per_task_metrics``
works unchanged.
"""

import sys

from roastcoffea.plots import *  # noqa: F403
from roastcoffea.plots import (
    __all__,  # noqa: F401
    chunks,
    cpu,
    io,
    memory,
    per_task,
    scaling,
    throughput,
    workers,
)

for _module in (chunks, cpu, io, memory, per_task, scaling, throughput, workers):
    sys.modules[f"{__name__}.{_module.__name__.rsplit('.', 1)[1]}"] = _module
