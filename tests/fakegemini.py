"""A scripted Gemini API (generateContent and streamGenerateContent) on 127.0.0.1, for the real Gemini CLI.

Each request is handed to a responder, which returns a ``Reply``: the parts of one model turn (text and
function calls) and its usage. The streaming form sends the whole turn as one SSE event, as the API may.
Requests Gemini CLI makes on its own (a title, the next-speaker check, the model router) are answered by
the responder too; ``GeminiScript`` in tests/e2e/gemini_harness.py tells them apart.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

MODEL = "gemini-2.5-flash"
_calls = itertools.count(1)


@dataclass
class Reply:
    """One model turn: its parts (``{"text": ...}`` or ``{"functionCall": {...}}``) and its usage."""

    parts: list[dict]
    prompt_tokens: int = 1000
    output_tokens: int = 100
    model: str = MODEL

    def body(self) -> dict:
        return {"candidates": [{"content": {"role": "model", "parts": self.parts}, "finishReason": "STOP",
                                "index": 0}],
                "usageMetadata": {"promptTokenCount": self.prompt_tokens,
                                  "candidatesTokenCount": self.output_tokens,
                                  "totalTokenCount": self.prompt_tokens + self.output_tokens},
                "modelVersion": self.model, "responseId": f"resp-{next(_calls)}"}


@dataclass
class Refusal:
    """An API error that Gemini CLI does not retry (400): it ends a headless session."""

    message: str = "fakegemini: refused by the script"


def say(text: str, **usage: Any) -> Reply:
    return Reply([{"text": text}], **usage)


def call(name: str, args: dict, **usage: Any) -> Reply:
    return Reply([{"functionCall": {"name": name, "args": args, "id": f"call-{next(_calls)}"}}], **usage)


@dataclass
class Seen:
    path: str
    body: dict


@dataclass
class FakeGemini:
    responder: Callable[[dict], Reply | Refusal] = lambda body: say("ok")
    seen: list[Seen] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="fakegemini",
                                        daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def env(self, home: Path, **extra: str) -> dict[str, str]:
        """The environment that runs the real Gemini CLI offline against this server, its folder trusted."""
        return {**{k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "GOOGLE_"))},
                "HOME": str(home), "GOOGLE_GEMINI_BASE_URL": self.url, "GEMINI_API_KEY": "fake-key",
                "GEMINI_CLI_TRUST_WORKSPACE": "true", "GEMINI_CLI_NO_RELAUNCH": "true", "NO_COLOR": "1",
                "GEMINI_TELEMETRY_ENABLED": "false", **extra}

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler(api: FakeGemini) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, payload: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw) if raw else {}
            except ValueError:
                body = {}
            path = self.path.split("?")[0]
            api.seen.append(Seen(path, body))
            if path.endswith(":countTokens"):
                return self._send(200, json.dumps({"totalTokens": len(raw) // 4}).encode(), "application/json")
            if not path.endswith(("GenerateContent", "generateContent")):
                return self._send(404, b'{"error": {"code": 404, "message": "fakegemini: no such path"}}',
                                  "application/json")
            try:
                reply = api.responder(body)
                if isinstance(reply, Refusal):
                    return self._send(400, json.dumps({"error": {"code": 400, "message": reply.message,
                                                                 "status": "INVALID_ARGUMENT"}}).encode(),
                                      "application/json")
                reply = reply.body()
            except Exception as exc:  # noqa: BLE001 - a broken script must show in the CLI's error, not hang it
                return self._send(500, json.dumps({"error": {"code": 500, "message": repr(exc)}}).encode(),
                                  "application/json")
            if path.endswith(":streamGenerateContent"):
                return self._send(200, f"data: {json.dumps(reply)}\r\n\r\n".encode(), "text/event-stream")
            return self._send(200, json.dumps(reply).encode(), "application/json")

        def do_GET(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._send(404, b"{}", "application/json")

    return Handler


@pytest.fixture
def fake_gemini():
    api = FakeGemini()
    try:
        yield api
    finally:
        api.close()
