"""The sdist builds where the C dependencies are, and says what to install where they are not."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.build
ROOT = Path(__file__).resolve().parents[1]


def test_the_sdist_builds_a_wheel_from_source(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-c",
            f"from scikit_build_core.build import build_sdist; build_sdist({str(tmp_path)!r})",
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=300,
    )
    (sdist,) = tmp_path.glob("roastcoffea-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {Path(*Path(n).parts[1:]).as_posix() for n in archive.getnames()}
    assert {"CMakeLists.txt", "LICENSE", "python/roastcoffea/_version.py"} <= names
    assert any(n.startswith("native/src/") for n in names)
    assert any(n.startswith("plugin/") for n in names)
    pip = [sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps"]
    built = subprocess.run(
        [*pip, "-w", str(tmp_path / "wheel"), str(sdist)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    assert list((tmp_path / "wheel").glob("roastcoffea-*.whl"))


def test_without_the_c_libraries_the_build_names_what_to_install(tmp_path: Path) -> None:
    # pkg-config then finds neither msgpack-c nor cJSON, as on a machine without them.
    env = dict(os.environ, PKG_CONFIG_LIBDIR=str(tmp_path / "none"), PKG_CONFIG_PATH="")
    done = subprocess.run(
        ["cmake", "-S", str(ROOT), "-B", str(tmp_path / "build")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode != 0
    message = " ".join((done.stdout + done.stderr).split())
    assert "apt-get install libmsgpack-dev libcjson-dev uthash-dev" in message
    assert "conda install -c conda-forge msgpack-c cjson uthash" in message
