"""A scripted Anthropic Messages API on 127.0.0.1, for tests of the SDK and of the real Claude Code.

Stdlib only. In the style of simonw/llm's fakes: no mocks, a real HTTP server that answers from a
queue. ``enqueue()`` scripts replies in order; ``history`` records every request received; when the
queue is empty ``set_responder(fn)`` is asked (with the request body) for the reply, which lets a
test answer whatever side requests Claude Code makes as a small state machine.

    api.enqueue(text("I'll look") + tool_use("read_file", {"path": "a.py"}), text('{"converged": true}'))
    api.enqueue(error(429, "rate_limit_error", "slow down", headers=FAST_RETRY))
    api.enqueue(delay(5, text("too late")))
    api.enqueue(malformed("truncated"))  # a 200 whose body is not a well-formed message
    api.enqueue(drip(text("slowly"), every=0.5))  # the headers at once, then the body a byte at a time
    api.enqueue(redirect(other.url))  # a 307 to another server

``POST /v1/messages`` answers JSON, or server-sent events when the body asks for ``"stream": true``
(the exact event sequence the SDK and Claude Code parse). ``POST /v1/messages/count_tokens``
answers a chars/4 estimate of the request (not a real tokenizer). Anything else, such as Claude
Code's ``HEAD /api/hello`` probe, gets 200 ``{}``.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

import pytest

from tests.fakeserver import FakeHandler, FakeServer

_ids = itertools.count(1)


def estimate_tokens(value: Any) -> int:
    """chars/4 of the JSON text: a stand-in for a tokenizer, good enough for sizes and budgets."""
    return max(1, len(value if isinstance(value, str) else json.dumps(value)) // 4)


@dataclass
class Message:
    """A scripted assistant message; ``+`` joins blocks (text and tool calls) into one message."""

    content: list[dict]
    model: str | None = None  # None: echo the requested model, so cost is counted at its price
    usage: dict | None = None  # None: chars/4 of the request in, of the content out
    stop_reason: str | None = None  # None: tool_use when a tool is called, else end_turn

    def __add__(self, other: Message) -> Message:
        return Message(self.content + other.content, self.model or other.model, self.usage or other.usage,
                       self.stop_reason or other.stop_reason)

    def body(self, request: dict) -> dict:
        stop = self.stop_reason or ("tool_use" if any(b["type"] == "tool_use" for b in self.content) else "end_turn")
        usage = {"input_tokens": estimate_tokens(_prompt(request)), "output_tokens": estimate_tokens(self.content),
                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, **(self.usage or {})}
        return {"id": f"msg_fake{next(_ids):06d}", "type": "message", "role": "assistant",
                "model": self.model or request.get("model", "claude-fake"), "content": self.content,
                "stop_reason": stop, "stop_sequence": None, "usage": usage}


@dataclass
class Error:
    status: int
    type: str
    message: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Delay:
    seconds: float
    response: Response


@dataclass
class Raw:
    """A 200 answered with exactly these bytes: a reply the API should never give, for fault tests."""

    payload: bytes
    content_type: str = "application/json"


@dataclass
class Drip:
    """Answer ``response``'s headers at once, then its body one byte every ``every`` seconds."""

    response: Response
    every: float = 0.5


@dataclass
class Redirect:
    """Answer ``status`` with ``Location: location`` (the same path on ``location``'s server)."""

    location: str
    status: int = 307


Response = Union[Message, Error, Delay, Raw, Drip, Redirect]


def text(s: str, *, model: str | None = None, usage: dict | None = None, stop_reason: str | None = None) -> Message:
    return Message([{"type": "text", "text": s}], model, usage, stop_reason)


def tool_use(name: str, input: dict, id: str | None = None, *, model: str | None = None,
             usage: dict | None = None) -> Message:
    block = {"type": "tool_use", "id": id or f"toolu_fake{next(_ids):06d}", "name": name, "input": input}
    return Message([block], model, usage)


# The SDK waits out ``retry-after`` only when it is above zero (``retry-after: 0`` means its own
# 0.5-8 s backoff); this header makes a retry immediate.
FAST_RETRY = {"retry-after-ms": "1"}


def error(status: int, type: str, message: str = "scripted error", headers: dict[str, str] | None = None) -> Error:
    """An API error, e.g. ``error(429, "rate_limit_error", headers=FAST_RETRY)``,
    ``error(529, "overloaded_error")``, ``error(500, "api_error")``."""
    return Error(status, type, message, dict(headers or {}))


def delay(seconds: float, response: Response) -> Delay:
    """Answer ``response`` only after ``seconds`` (a slow server; closing the fake cuts the wait short)."""
    return Delay(seconds, response)


def drip(response: Response, every: float = 0.5) -> Drip:
    """A slow-drip server: the headers of ``response`` at once, then a byte of its body every ``every`` s."""
    return Drip(response, every)


def redirect(location: str, status: int = 307) -> Redirect:
    """A redirect to ``location`` (a base URL: the request's own path is kept)."""
    return Redirect(location, status)


# The malformed 200 replies, by name: each one a way a proxy or a broken server answers.
MALFORMED = {
    "empty": b"",
    "truncated": b'{"id": "msg_fake", "type": "message", "role": "assistant", "content": [{"type": "te',
    "not-json": b"<html>502 Bad Gateway</html>",
    "no-usage": json.dumps({"id": "msg_fake", "type": "message", "role": "assistant", "model": "m",
                            "content": [{"type": "text", "text": "{}"}], "stop_reason": "end_turn"}).encode(),
    "content-not-a-list": json.dumps({"id": "msg_fake", "type": "message", "role": "assistant", "model": "m",
                                      "content": "converged", "stop_reason": "end_turn",
                                      "usage": {"input_tokens": 1000, "output_tokens": 100}}).encode(),
    "block-without-type": json.dumps({"id": "msg_fake", "type": "message", "role": "assistant", "model": "m",
                                      "content": [{"text": "{}"}], "stop_reason": "end_turn",
                                      "usage": {"input_tokens": 1000, "output_tokens": 100}}).encode(),
    "not-an-object": b"[1, 2, 3]",
    "usage-wrong-types": json.dumps({"id": "msg_fake", "type": "message", "role": "assistant", "model": "m",
                                     "content": [{"type": "text", "text": "{}"}], "stop_reason": "end_turn",
                                     "usage": {"input_tokens": "many", "output_tokens": None}}).encode(),
}


def malformed(kind: str) -> Raw:
    """One of the ``MALFORMED`` replies, as a 200 with a JSON content type."""
    return Raw(MALFORMED[kind])


def _prompt(request: dict) -> dict:
    return {k: request[k] for k in ("system", "messages", "tools") if k in request}


def _sse(body: dict) -> bytes:
    """The streaming form of a complete message, event by event as the real API sends it."""
    events: list[tuple[str, dict]] = [
        ("message_start", {"type": "message_start", "message": {
            **body, "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {**body["usage"], "output_tokens": 1}}}),
        ("ping", {"type": "ping"}),
    ]
    for i, block in enumerate(body["content"]):
        if block["type"] == "text":
            start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
        elif block["type"] == "tool_use":
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            raise ValueError(f"fakeapi cannot stream a {block['type']!r} block")
        events += [("content_block_start", {"type": "content_block_start", "index": i, "content_block": start}),
                   ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}),
                   ("content_block_stop", {"type": "content_block_stop", "index": i})]
    events += [("message_delta", {"type": "message_delta",
                                  "delta": {"stop_reason": body["stop_reason"], "stop_sequence": None},
                                  "usage": {"output_tokens": body["usage"]["output_tokens"]}}),
               ("message_stop", {"type": "message_stop"})]
    return b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events)


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class FakeAPI(FakeServer):
    def __init__(self) -> None:
        self.history: list[Request] = []
        self._queue: deque[Response] = deque()
        self._responder: Callable[[dict], Response] | None = None
        self._lock = threading.Lock()
        self.start(_Handler, "fakeapi")

    def enqueue(self, *responses: Response) -> None:
        with self._lock:
            self._queue.extend(responses)

    def set_responder(self, fn: Callable[[dict], Response] | None) -> None:
        self._responder = fn

    @property
    def messages(self) -> list[Request]:
        """The Messages API calls received (``history`` without probes and token counts)."""
        return [r for r in self.history if r.method == "POST" and r.path.split("?")[0] == "/v1/messages"]

    @property
    def pending(self) -> int:
        return len(self._queue)

    def claude_env(self, home: Path, **extra: str) -> dict[str, str]:
        """The environment that runs the real Claude Code offline against this server."""
        return {**os.environ, "HOME": str(home), "ANTHROPIC_BASE_URL": self.url, "ANTHROPIC_API_KEY": "x",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
                "DISABLE_ERROR_REPORTING": "1", "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_MAX_RETRIES": "0",
                **extra}

    def _next(self, body: dict) -> Response:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self._responder is not None:
            return self._responder(body)
        return Error(400, "invalid_request_error", "fakeapi: nothing enqueued for this request")


class _Handler(FakeHandler):
    fake: FakeAPI

    def _record(self) -> Request:
        raw = self.read_raw()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        request = Request(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        self.fake.history.append(request)
        return request

    def send(self, status: int, payload: bytes, content_type: str = "application/json",
             headers: dict[str, str] | None = None, every: float | None = None) -> None:
        super().send(status, payload, content_type, {"request-id": f"req_fake{next(_ids):06d}", **(headers or {})},
                     every)

    def do_POST(self) -> None:
        request = self._record()
        path = self.path.split("?")[0]
        body = request.body if isinstance(request.body, dict) else {}
        if path == "/v1/messages/count_tokens":
            return self.send_json(200, {"input_tokens": estimate_tokens(_prompt(body))})
        if path != "/v1/messages":
            return self.send_json(200, {})
        response, every = self.fake._next(body), None
        while isinstance(response, (Delay, Drip)):
            if isinstance(response, Drip):
                every = response.every
            elif self.fake.closing.wait(response.seconds):
                return
            response = response.response
        try:
            if isinstance(response, Redirect):
                return self.send(response.status, b"", "text/plain",
                                 {"Location": response.location.rstrip("/") + self.path})
            if isinstance(response, Raw):
                return self.send(200, response.payload, response.content_type, every=every)
            if isinstance(response, Error):
                return self.send_json(response.status, {"type": "error", "error": {
                    "type": response.type, "message": response.message}}, response.headers, every)
            message = response.body(body)
            if body.get("stream"):
                return self.send(200, _sse(message), "text/event-stream", every=every)
            return self.send_json(200, message, every=every)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up waiting: fine
            pass

    def do_GET(self) -> None:
        self._record()
        self.send_json(200, {})

    do_HEAD = do_GET
    do_PUT = do_DELETE = do_PATCH = do_POST


@pytest.fixture
def fake_api():
    with FakeAPI() as api:
        yield api
