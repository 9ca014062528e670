"""Reading a measurement needs neither Dask's distributed nor the native extension; a
worker loads the worker side of the plugin only."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from measured_run import Measured

import roastcoffea
from roastcoffea import RoastPlugin, _native

#: Run first in the child: ``distributed`` and the extension cannot be imported there.
BLOCK = textwrap.dedent(
    """
    import importlib.abc, sys

    class Absent(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "distributed" or name == "roastcoffea._native":
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)

    sys.meta_path.insert(0, Absent())
    """
)


def run_python(code: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_import_loads_neither_dask_nor_the_extension() -> None:
    out = run_python(
        "import sys, roastcoffea\n"
        "print(sorted(m for m in ('distributed', 'dask', 'roastcoffea._native', 'numpy')"
        " if m in sys.modules))"
    )
    assert out.strip() == "[]"


def test_a_saved_measurement_is_shown_reported_and_plotted_without_distributed(
    measured: Measured, tmp_path: Path
) -> None:
    code = BLOCK + textwrap.dedent(
        """
        from roastcoffea.cli import main
        path, out = sys.argv[1], sys.argv[2]
        for command in (["show", path], ["report", path, "-o", out + "/r.html"],
                        ["plot", path, "-o", out + "/plots"]):
            assert main(command) == 0, command
        from roastcoffea import load_measurement
        metrics = load_measurement(path)[0]
        print(metrics["total_events"], "distributed" in sys.modules)
        """
    )
    out = run_python(code, str(measured.path), str(tmp_path))
    assert out.splitlines()[-1] == f"{measured.metrics['total_events']} False"
    assert (tmp_path / "r.html").stat().st_size > 0
    assert len(list((tmp_path / "plots").glob("*.png"))) >= 10


def test_one_decode_error_for_the_package() -> None:
    assert _native.DecodeError is roastcoffea.DecodeError
    assert issubclass(roastcoffea.DecodeError, ValueError)


#: What a worker's own modules are, read in the worker (``eval`` travels by reference, so
#: nothing of the tests is imported there).
WORKER_MODULES = "sorted(m for m in __import__('sys').modules if m.startswith('roastcoffea'))"


def test_a_worker_loads_the_worker_side_only(make_cluster: Any) -> None:
    _, own = make_cluster(n_workers=1)
    own.register_plugin(RoastPlugin())
    (loaded,) = own.run(eval, WORKER_MODULES).values()
    assert "roastcoffea.plugin.worker.plugin" in loaded  # the plugin is installed
    assert "roastcoffea.instrument._phase_hooks" in loaded
    other_rooms = ("roastcoffea.plugin.scheduler", "roastcoffea.plugin.client")
    assert not [m for m in loaded if m.startswith(other_rooms)]
    assert "roastcoffea.collector" not in loaded and "roastcoffea.measurement" not in loaded
