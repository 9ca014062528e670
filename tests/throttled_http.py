"""A local HTTP file server with a bandwidth limit, to read ROOT files as from remote storage.

It answers byte-range GETs (one range, or several as ``multipart/byteranges``,
as uproot's HTTPSource asks) for the files of one directory. Each response is
paced at ``bytes_per_second``: a task reading over its own connection sees that
bandwidth whatever the other workers do.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

BLOCK = 16 << 10
BOUNDARY = "roastcoffea-test-boundary"
_RANGE = re.compile(r"(\d+)-(\d+)")


class Link:
    """Paces responses at ``bytes_per_second`` each; counts the bytes and the time sending them."""

    def __init__(self, bytes_per_second: float) -> None:
        self.bytes_per_second = bytes_per_second
        self._lock = threading.Lock()
        self.sent = 0
        self.busy_seconds = 0.0
        self.own: dict[str, Link] = {}

    def send(self, write: Callable[[bytes], object], data: bytes) -> None:
        start = time.perf_counter()
        for at in range(0, len(data), BLOCK):
            block = data[at : at + BLOCK]
            due = start + (at + len(block)) / self.bytes_per_second
            time.sleep(max(due - time.perf_counter(), 0.0))
            write(block)
        with self._lock:
            self.sent += len(data)
            self.busy_seconds += time.perf_counter() - start

    @property
    def rate(self) -> float:
        """Bytes per second the responses actually took (below the limit on a busy machine)."""
        return self.sent / self.busy_seconds


def _handler(root: Path, link: Link, own: dict[str, Link]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            path = root / self.path.lstrip("/")
            if not path.is_file():
                self.send_error(404)
                return
            data = path.read_bytes()
            ranges = [
                (int(a), min(int(b), len(data) - 1))
                for a, b in _RANGE.findall(self.headers.get("Range", ""))
            ]
            if not ranges:
                self._reply(200, data, {"Content-Type": "application/octet-stream"})
            elif len(ranges) == 1:
                a, b = ranges[0]
                headers = {"Content-Range": f"bytes {a}-{b}/{len(data)}"}
                self._reply(206, data[a : b + 1], headers)
            else:
                parts = []
                for a, b in ranges:
                    head = (
                        f"--{BOUNDARY}\r\nContent-Type: application/octet-stream\r\n"
                        f"Content-Range: bytes {a}-{b}/{len(data)}\r\n\r\n"
                    )
                    parts.append(head.encode() + data[a : b + 1] + b"\r\n")
                body = b"".join(parts) + f"--{BOUNDARY}--\r\n".encode()
                content = f"multipart/byteranges; boundary={BOUNDARY}"
                self._reply(206, body, {"Content-Type": content})

        def _reply(self, status: int, body: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            own.get(self.path.lstrip("/"), link).send(self.wfile.write, body)

    return Handler


@contextmanager
def serve(
    root: Path, bytes_per_second: float, own_rates: dict[str, float] | None = None
) -> Iterator[tuple[str, Link]]:
    """Serve ``root`` at ``http://127.0.0.1:<port>/``; yields the base URL and the link.

    A file named in ``own_rates`` is served over a link of its own at that rate
    (``link.own[name]``); the others share the one at ``bytes_per_second``.
    """
    link = Link(bytes_per_second)
    link.own = {name: Link(rate) for name, rate in (own_rates or {}).items()}
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(root, link, link.own))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", link
    finally:
        server.shutdown()
        server.server_close()
