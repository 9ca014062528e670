"""A real dask-gateway-server on 127.0.0.1, with the facility configuration of docs/guide.md.

The server runs its local backend (``UnsafeLocalBackend``: clusters are processes of the
test's own user, as dask-gateway's own tests run them) behind its proxy, which serves HTTP
and the schedulers' TLS on one port (its default), with the simple authenticator. Its
configuration is written here: the addresses, the backend and, appended unchanged, the
``dask_gateway_config.py`` block of docs/guide.md, so the guide's snippet is the one tested.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "guide.md"
_PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)

_BASE = """\
c.DaskGateway.address = "127.0.0.1:{api}"
c.Proxy.address = "127.0.0.1:{web}"
c.DaskGateway.backend_class = "dask_gateway_server.backends.local.UnsafeLocalBackend"
c.DaskGateway.authenticator_class = "dask_gateway_server.auth.SimpleAuthenticator"
c.LocalBackend.clusters_directory = "{clusters}"
c.ClusterConfig.worker_memory = "2 G"
c.ClusterConfig.idle_timeout = 600
"""


def facility_snippet() -> str:
    """The guide's gateway configuration: its python block that sets ``cluster_options``."""
    blocks = [
        b for b in _PYTHON_BLOCK.findall(GUIDE.read_text()) if "c.Backend.cluster_options" in b
    ]
    assert len(blocks) == 1, "docs/guide.md must hold one dask_gateway_config.py block"
    return blocks[0]


def _free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/api/health", timeout=2) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


@contextmanager
def gateway_server(directory: Path, timeout: float = 60.0) -> Iterator[str]:
    """Start ``dask-gateway-server`` configured in ``directory``; yields its public address."""
    api, web = _free_ports(2)
    clusters = directory / "clusters"
    clusters.mkdir()
    config = directory / "dask_gateway_config.py"
    base = _BASE.format(api=api, web=web, clusters=clusters)
    config.write_text(base + facility_snippet())
    # The clusters run `dask scheduler` / `dask worker` from this interpreter's environment.
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    log = (directory / "gateway.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "dask_gateway_server", "-f", str(config)],
        cwd=directory,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    address = f"http://127.0.0.1:{web}"
    try:
        deadline = time.monotonic() + timeout
        while not _healthy(address):
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    "dask-gateway-server did not start:\n"
                    + (directory / "gateway.log").read_text()[-3000:]
                )
            time.sleep(0.2)
        yield address
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
