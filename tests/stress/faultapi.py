"""A Messages API that misbehaves at the HTTP level, where tests/fakeapi.py (a well-behaved server) cannot:
raw replies (empty, truncated, wrong content type), connection resets, silence. Each request is answered
by ``fault(body)``, which returns a ``Raw``, ``RESET``, ``CLOSE`` or ``Hang``; ``billed`` adds up the
tokens of the replies whose usage a client could read, so a test can check the charge."""

from __future__ import annotations

import json
import socket
import socketserver
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Union


@dataclass
class Raw:
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    tokens: int = 0  # what this reply bills, when its usage is readable
    length: int | None = None  # a Content-Length other than the body's: the connection closes short


@dataclass
class Hang:
    seconds: float


RESET, CLOSE = "reset", "close"
Fault = Union[Raw, Hang, str]


def message(content: list[dict], *, usage: dict | None | bool = True, stop_reason: str = "end_turn",
            **extra) -> dict:
    """A Messages API reply; ``usage=False`` leaves usage out, a dict replaces it."""
    doc = {"id": "msg_fault", "type": "message", "role": "assistant", "model": "claude-haiku-5-5",
           "content": content, "stop_reason": stop_reason, "stop_sequence": None, **extra}
    if usage is True:
        doc["usage"] = {"input_tokens": 100, "output_tokens": 10, "cache_creation_input_tokens": 0,
                        "cache_read_input_tokens": 0}
    elif usage is not False:
        doc["usage"] = usage
    return doc


def ok(doc: dict, **kw) -> Raw:
    usage = doc.get("usage") if isinstance(doc.get("usage"), dict) else {}
    return Raw(200, json.dumps(doc).encode(), tokens=sum(v for v in usage.values() if isinstance(v, int)), **kw)


def error(status: int, kind: str, headers: dict[str, str] | None = None) -> Raw:
    body = {"type": "error", "error": {"type": kind, "message": f"scripted {status}"}}
    return Raw(status, json.dumps(body).encode(), headers=dict(headers or {}))


class FaultAPI:
    def __init__(self, fault: Callable[[dict], Fault]) -> None:
        self.fault, self.requests, self.billed = fault, 0, 0
        self._lock = threading.Lock()
        api = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                length = 0
                self.rfile.readline()
                while (line := self.rfile.readline().strip()):
                    name, _, value = line.decode("latin-1").partition(":")
                    if name.lower() == "content-length":
                        length = int(value)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                with api._lock:
                    api.requests += 1
                    reply = api.fault(body)
                    if isinstance(reply, Raw):
                        api.billed += reply.tokens
                api.answer(self.connection, self.wfile, reply)

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    @staticmethod
    def answer(conn: socket.socket, out, reply: Fault) -> None:
        if isinstance(reply, Hang):
            time.sleep(reply.seconds)
            return
        if reply == RESET:  # linger 0: close() sends RST
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return
        if reply == CLOSE:
            return
        head = [f"HTTP/1.1 {reply.status} X", f"Content-Type: {reply.content_type}",
                f"Content-Length: {len(reply.body) if reply.length is None else reply.length}", "Connection: close",
                *(f"{k}: {v}" for k, v in reply.headers.items())]
        try:
            out.write(("\r\n".join(head) + "\r\n\r\n").encode() + reply.body)
        except OSError:
            pass

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
