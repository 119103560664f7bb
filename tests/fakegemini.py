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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.fakeserver import FakeHandler, FakeServer

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
class FakeGemini(FakeServer):
    responder: Callable[[dict], Reply | Refusal] = lambda body: say("ok")
    seen: list[Seen] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.start(_Handler, "fakegemini")

    def env(self, home: Path, **extra: str) -> dict[str, str]:
        """The environment that runs the real Gemini CLI offline against this server, its folder trusted."""
        return {**{k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "GOOGLE_"))},
                "HOME": str(home), "GOOGLE_GEMINI_BASE_URL": self.url, "GEMINI_API_KEY": "fake-key",
                "GEMINI_CLI_TRUST_WORKSPACE": "true", "GEMINI_CLI_NO_RELAUNCH": "true", "NO_COLOR": "1",
                "GEMINI_TELEMETRY_ENABLED": "false", **extra}


class _Handler(FakeHandler):
    fake: FakeGemini

    def do_POST(self) -> None:
        raw = self.read_raw()
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {}
        path = self.path.split("?")[0]
        self.fake.seen.append(Seen(path, body))
        if path.endswith(":countTokens"):
            return self.send_json(200, {"totalTokens": len(raw) // 4})
        if not path.endswith(("GenerateContent", "generateContent")):
            return self.send(404, b'{"error": {"code": 404, "message": "fakegemini: no such path"}}')
        try:
            reply = self.fake.responder(body)
            if isinstance(reply, Refusal):
                return self.send_json(400, {"error": {"code": 400, "message": reply.message,
                                                      "status": "INVALID_ARGUMENT"}})
            reply = reply.body()
        except Exception as exc:  # noqa: BLE001 - a broken script must show in the CLI's error, not hang it
            return self.send_json(500, {"error": {"code": 500, "message": repr(exc)}})
        if path.endswith(":streamGenerateContent"):
            return self.send(200, f"data: {json.dumps(reply)}\r\n\r\n".encode(), "text/event-stream")
        return self.send_json(200, reply)

    def do_GET(self) -> None:
        self.read_raw()
        self.send(404, b"{}")


@pytest.fixture
def fake_gemini():
    with FakeGemini() as api:
        yield api
