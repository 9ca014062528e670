"""The wheel of `make wheel` installs into a fresh venv and needs nothing from the system.

The test builds the wheel with the Makefile's own target, installs it (and only it) into a
new venv, checks with ``ldd`` that every library the extension needs beyond the C library
resolves inside the installed wheel, and runs the plugin pair on a LocalCluster whose
workers import that installed copy. The venv borrows the other dependencies (distributed,
numpy, ...) from the test environment through a ``.pth`` line; roastcoffea itself is
checked to come from the wheel.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest
from make_target import ROOT, make

pytestmark = [pytest.mark.build, pytest.mark.cluster]
#: What a manylinux wheel may take from the system: the C library and the loader.
SYSTEM = re.compile(r"^(linux-vdso|libc|libm|libpthread|libdl|librt|ld-linux)[.-]")


@pytest.fixture(scope="module")
def wheel() -> Path:
    make("wheel")
    (path,) = (ROOT / "dist").glob("roastcoffea-*.whl")
    return path


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, timeout=300)
    python = root / "bin" / "python"
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
        timeout=300,
    )
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # The dependencies, from this environment; appended after the venv's own site-packages.
    Path(site, "test-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return root


def run_in(venv: Path, code: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    done = subprocess.run(
        [venv / "bin" / "python", "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=venv,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout


def test_the_wheel_has_a_manylinux_tag(wheel: Path) -> None:
    assert re.search(r"-cp3\d+-cp3\d+-\S*manylinux_2_\d+_x86_64\.whl$", wheel.name), wheel.name


def test_every_library_beyond_libc_resolves_inside_the_wheel(venv: Path) -> None:
    native = Path(run_in(venv, "import roastcoffea._native as n; print(n.__file__)").strip())
    assert venv in native.parents
    ldd = subprocess.run(["ldd", native], capture_output=True, text=True, check=True).stdout
    needed = [line.split() for line in ldd.splitlines() if line.strip()]
    outside = []
    for fields in needed:
        name = fields[0]
        path = fields[2] if len(fields) > 2 and fields[1] == "=>" else name
        if not SYSTEM.match(Path(name).name) and venv not in Path(path).parents:
            outside.append(" ".join(fields))
    assert outside == [], ldd
    assert "not found" not in ldd
    assert not re.search(r"libmsgpack|/usr/lib\S*libcjson", ldd), ldd


def test_the_installed_plugin_runs_on_a_local_cluster(venv: Path) -> None:
    out = run_in(
        venv,
        """
        import roastcoffea
        from distributed import Client, LocalCluster
        from roastcoffea import MetricsCollector

        def where():
            import roastcoffea._native
            return roastcoffea._native.__file__

        with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                          dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as client:
            with MetricsCollector(client) as mc:
                total = sum(client.gather(client.map(lambda x: x + 1, range(10))))
            tasks = sum(row["tasks"] for row in mc.snapshot["tasks"] if row["prefix"] == "lambda")
            print(total, tasks, roastcoffea.__file__, list(client.run(where).values())[0])
        """,
    )
    total, tasks, package, worker_native = out.split()
    assert (total, tasks) == ("55", "10")
    assert venv in Path(package).parents and venv in Path(worker_native).parents
