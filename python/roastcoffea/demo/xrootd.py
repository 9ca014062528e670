"""A local XRootD server (Debian's ``xrootd-server``) serving files to read as ``root://`` URLs.

The demo and the tests read their files from it as a facility's analysis reads
its data: through uproot's default handler for ``root://`` (fsspec-xrootd over
the XRootD client). Pacing uses XRootD's own throttle plugin
(``libXrdThrottle``): the server hands out at most ``bytes_per_second`` in each
one-second interval of its own clock, and a read beyond the interval's share
waits for the next one.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

#: The throttle plugin's interval: its share of bytes is renewed once per second.
THROTTLE_INTERVAL_SECONDS = 1.0

_CONFIG = """\
all.export /
oss.localroot {root}
all.adminpath {admin}
all.pidpath {admin}
xrd.network nodnr
xrd.allow host {allow}
"""
_THROTTLE = """\
xrootd.fslib throttle default
throttle.throttle data {rate}
"""


class XRootDError(RuntimeError):
    """The XRootD server could not be started."""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _place(files: Iterable[Path], root: Path) -> list[str]:
    """Link (or copy, across file systems) each file into the exported directory."""
    names = []
    for path in files:
        target = root / path.name
        if target.exists():
            raise XRootDError(f"two files to serve are named {path.name}")
        try:
            os.link(path, target)
        except OSError:
            shutil.copyfile(path, target)
        target.chmod(0o644)
        names.append(path.name)
    return names


@contextmanager
def serve(
    files: Iterable[str | os.PathLike[str]],
    bytes_per_second: float | None = None,
    startup_timeout: float = 30.0,
    allow: str = "127.0.0.1",
) -> Iterator[dict[str, str]]:
    """Serve ``files`` from a local XRootD server; yields each file's ``root://`` URL by its path.

    Parameters
    ----------
    files : iterable of path-like
        The files to serve, by their names (which must differ).
    bytes_per_second : float, optional
        Pace the server with XRootD's throttle plugin: at most this many bytes in
        each one-second interval, over all clients.
    startup_timeout : float, default 30
        Seconds to wait for the server to accept connections.
    allow : str, default "127.0.0.1"
        The hosts the server admits (XRootD's ``xrd.allow host`` pattern; ``"*"``: every
        host). XRootD has no option to listen on one address: it listens on every
        interface and resets every connection from a host it does not admit.

    Raises
    ------
    XRootDError
        When ``xrootd`` is not installed or does not start; its log is in the message.
    """
    binary = shutil.which("xrootd")
    if binary is None:
        raise XRootDError(
            "the xrootd server is not installed: apt-get install xrootd-server "
            "(make demo XROOTD=1 and make test install it)"
        )
    paths = [Path(f).resolve() for f in files]
    # xrootd refuses to run as root; it then runs as nobody (-R), who must reach the files.
    as_root = os.geteuid() == 0
    with tempfile.TemporaryDirectory(prefix="roastcoffea-xrootd-") as scratch:
        home = Path(scratch)
        root, admin = home / "export", home / "admin"
        root.mkdir()
        admin.mkdir()
        for directory in (home, root, admin):
            directory.chmod(0o777 if directory is admin else 0o755)
        names = _place(paths, root)
        config = _CONFIG.format(root=root, admin=admin, allow=allow)
        if bytes_per_second is not None:
            config += _THROTTLE.format(rate=int(bytes_per_second))
        (home / "xrootd.cfg").write_text(config)
        for attempt in range(3):  # the free port may be taken before xrootd binds it
            port = _free_port()
            command = [binary, "-c", str(home / "xrootd.cfg"), "-p", str(port), "-n", "roastcoffea"]
            command += ["-l", str(admin / "xrootd.log")] + (["-R", "nobody"] if as_root else [])
            server = subprocess.Popen(
                command, cwd=admin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
            try:
                _wait_until_ready(server, port, startup_timeout, admin)
                break
            except XRootDError:
                if attempt == 2:
                    raise
        try:
            yield {
                str(path): f"root://127.0.0.1:{port}//{name}"
                for path, name in zip(paths, names, strict=True)
            }
        finally:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def _wait_until_ready(server: subprocess.Popen, port: int, timeout: float, logs: Path) -> None:
    deadline = time.monotonic() + timeout
    while not _accepts(port):
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            _, stderr = server.communicate()
            log = "".join(p.read_text(errors="replace") for p in logs.rglob("*log*") if p.is_file())
            reason = "exited" if server.returncode else "did not accept connections"
            raise XRootDError(
                f"xrootd {reason} on port {port}:\n{stderr.decode(errors='replace')}{log[-2000:]}"
            )
        time.sleep(0.05)
