"""A scripted OpenAI Responses API on 127.0.0.1, for tests of the real Codex CLI (and `codex exec`).

Stdlib only, like tests/fakeapi.py (the Anthropic one): a real HTTP server that answers each
``POST /v1/responses`` with the server-sent events Codex parses (``response.created``, one
``response.output_item.done`` per output item, ``response.completed`` with the usage). A test sets a
responder, called with each request body, that returns a ``Reply``: the assistant's text, or a shell
command for Codex's ``exec_command`` tool. ``requests`` records every body received. Any GET (Codex's
model list) gets an empty list.

    api.set_responder(lambda body: say("done") if ... else run("sed -i s/-/+/ calc.py"))
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.fakeserver import FakeHandler, FakeServer

_ids = itertools.count(1)


@dataclass
class Reply:
    """One model response: its output items and its usage (None: chars/4 of the request in, of the output out)."""

    items: list[dict]
    usage: dict | None = None

    def events(self, body: dict) -> list[dict]:
        rid = f"resp_fake{next(_ids):06d}"
        usage = self.usage or {"input_tokens": max(1, len(json.dumps(body.get("input", []))) // 4),
                               "input_tokens_details": {"cached_tokens": 0},
                               "output_tokens": max(1, len(json.dumps(self.items)) // 4),
                               "output_tokens_details": {"reasoning_tokens": 0}}
        usage = {**usage, "total_tokens": usage["input_tokens"] + usage["output_tokens"]}
        return [{"type": "response.created", "response": {"id": rid}},
                *({"type": "response.output_item.done", "item": item} for item in self.items),
                {"type": "response.completed", "response": {"id": rid, "usage": usage}}]


def say(text: str, usage: dict | None = None) -> Reply:
    return Reply([{"type": "message", "role": "assistant", "id": f"msg_fake{next(_ids):06d}",
                   "content": [{"type": "output_text", "text": text}]}], usage)


def run(command: str, usage: dict | None = None) -> Reply:
    """A call of Codex's shell tool (``exec_command``) with ``command``."""
    return Reply([{"type": "function_call", "name": "exec_command", "call_id": f"call_fake{next(_ids):06d}",
                   "arguments": json.dumps({"cmd": command})}], usage)


def patch(text: str, usage: dict | None = None) -> Reply:
    """A call of Codex's freeform ``apply_patch`` tool (offered to models such as gpt-5.5) with the patch ``text``."""
    return Reply([{"type": "custom_tool_call", "name": "apply_patch", "call_id": f"call_fake{next(_ids):06d}",
                   "input": text}], usage)


def texts(body: dict, *roles: str) -> list[str]:
    """The texts of the request's input messages of ``roles`` (all roles when none is named), and the
    outputs of its tool calls when ``tool`` is one of them, in order."""
    found = []
    for item in body.get("input", []):
        if item.get("type") in ("function_call_output", "custom_tool_call_output") and (not roles or "tool" in roles):
            output = item.get("output")
            found.append(output if isinstance(output, str) else json.dumps(output))
        elif item.get("type") == "message" and (not roles or item.get("role") in roles):
            content = item.get("content")
            parts = content if isinstance(content, list) else [{"text": content}]
            found.append("\n".join(str(p.get("text", "")) for p in parts if isinstance(p, dict)))
    return found


@dataclass
class FakeOpenAI(FakeServer):
    responder: Callable[[dict], Reply] = lambda body: say("ok")
    requests: list[dict] = field(default_factory=list)
    billed: list[dict] = field(default_factory=list)  # the usage of every response sent

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self.start(_Handler, "fakeopenai")

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def set_responder(self, fn: Callable[[dict], Reply]) -> None:
        self.responder = fn

    def codex_config(self, codex_home: Path, model: str, extra: str = "") -> Path:
        """A Codex config.toml that sends every model request here (no key needed) with ``model``."""
        codex_home.mkdir(parents=True, exist_ok=True)
        path = codex_home / "config.toml"
        provider = f'[model_providers.fake]\nname = "fake"\nbase_url = "{self.base_url}"\nwire_api = "responses"\n'
        path.write_text(f'model = "{model}"\nmodel_provider = "fake"\n{extra}\n{provider}', encoding="utf-8")
        return path

    def _answer(self, body: dict) -> bytes:
        with self._lock:
            self.requests.append(body)
            reply = self.responder(body)
            events = reply.events(body)
            self.billed.append(events[-1]["response"]["usage"])
        return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


class _Handler(FakeHandler):
    fake: FakeOpenAI

    def do_POST(self) -> None:
        raw = self.read_raw()
        if not self.path.rstrip("/").endswith("/responses"):
            return self.send(200, b"{}")
        try:
            body = json.loads(raw)
        except ValueError:
            return self.send(400, b'{"error": {"message": "not JSON"}}')
        self.send(200, self.fake._answer(body), "text/event-stream")

    def do_GET(self) -> None:
        self.send(200, b'{"data": [], "models": []}')


@pytest.fixture
def fake_openai():
    with FakeOpenAI() as api:
        yield api
