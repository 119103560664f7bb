"""What the scripted APIs share (fakeapi.py, fakeopenai.py, fakegemini.py): a real HTTP server on 127.0.0.1.

Stdlib only. ``FakeServer.start`` serves on a free port in a daemon thread, ``url`` is its address, and
``close`` (or leaving a ``with`` block) stops it and cuts short any reply still waiting on the fake's
``closing`` event. ``FakeHandler`` reads a request's body and sends a reply; each fake's handler, a subclass,
says what a request is answered with (``self.fake`` is the fake it serves).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self



class FakeServer:
    url: str

    def start(self, handler: type[FakeHandler], name: str) -> None:
        self.closing = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._server.fake = self  # type: ignore[attr-defined] - what FakeHandler.fake reads
        threading.Thread(target=self._server.serve_forever, args=(0.05,), name=name, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self.closing.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class FakeHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    @property
    def fake(self) -> Any:
        return self.server.fake  # type: ignore[attr-defined]

    def log_message(self, *args: Any) -> None:  # keep pytest output clean
        pass

    def read_raw(self) -> bytes:
        """The request's body, sent whole (Content-Length) or in chunks."""
        if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))
        raw = b""
        while size := int(self.rfile.readline().strip() or b"0", 16):
            raw += self.rfile.read(size)
            self.rfile.readline()
        self.rfile.readline()
        return raw

    def send(self, status: int, payload: bytes, content_type: str = "application/json",
             headers: dict[str, str] | None = None, every: float | None = None) -> None:
        """Answer ``payload``; with ``every``, the headers at once and then the body a byte every ``every`` s,
        until the client hangs up or the fake closes (a slow-drip server)."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command == "HEAD":
            return
        if every is None:
            self.wfile.write(payload)
            return
        self.wfile.flush()
        for i in range(len(payload)):
            if self.fake.closing.wait(every):
                return
            self.wfile.write(payload[i:i + 1])
            self.wfile.flush()

    def send_json(self, status: int, doc: Any, headers: dict[str, str] | None = None,
                  every: float | None = None) -> None:
        self.send(status, json.dumps(doc).encode(), "application/json", headers, every)
