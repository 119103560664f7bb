"""Realistic Claude Code session transcripts of any size, for bench_transcript.py.

    python benchmarks/transcripts.py BYTES > s.jsonl

The shape Claude Code 2.x writes (compact JSON, non-ASCII as UTF-8): every entry carries the
session's metadata (parentUuid, cwd, sessionId, version, gitBranch, uuid, timestamp); an assistant
message is one line per content block (thinking with its signature, text, tool_use), each with the
same id and usage; each tool_use is answered by a user line holding the tool result twice (in the
message and in ``toolUseResult``), its size heavy-tailed (a ``ls`` of 100 bytes, a file read of
40 KB, now and then a 300 KB log). Every 40th tool call is a Task whose result carries the subagent's
own ``usage`` on a user line, every 50th tool input has a "usage" key, and texts say "usage" in
passing: the traps of a bytes search.
Now and then the user types a prompt. About 30 KB a message, so 500 MB hold some 15,000 messages.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Iterator

MODELS = ("claude-opus-5-5", "claude-opus-5-5", "claude-opus-5-5", "claude-haiku-5-5")
_CODE = "".join(
    f"    def handle_{i}(self, request: Request) -> Response:\n"
    f'        """Serve /api/v2/items/{i}: the usage of the "cache" (é, ü, ✓) is counted per\ttenant."""\n'
    f"        value = self.store.get({i!r}, default=None)  # {{'k': {i}}}\n"
    f"        return Response(status=200, body=json.dumps({{\"id\": {i}, \"usage\": value}}))\n\n"
    for i in range(4000))
_SIGNATURE = "EqQBCkgIBxABGAIiQL" + "x9Yb3F0aGVyc2lnbmF0dXJlYnl0ZXM" * 24


def _text(rng: random.Random, size: int) -> str:
    at = rng.randrange(0, len(_CODE) - size) if size < len(_CODE) else 0
    return (_CODE * (1 + size // len(_CODE)))[at:at + size]


def _size(rng: random.Random, median: int, cap: int) -> int:
    return min(cap, max(20, int(rng.lognormvariate(0, 1.4) * median)))


class Session:
    """Entries of one session, message after message; ``lines()`` yields them encoded."""

    def __init__(self, seed: int = 1) -> None:
        self.rng = random.Random(seed)
        self.n = self.messages = 0
        self.meta = {"isSidechain": False, "userType": "external", "cwd": "/home/dev/project",
                     "sessionId": "0b8f3c52-6f1e-4a7e-9d0c-2f4b8e1a7c93", "version": "2.1.328", "gitBranch": "main"}

    def _entry(self, kind: str, message: dict, **extra) -> bytes:
        self.n += 1
        # As Claude Code orders them: a user entry's type comes before its message, an assistant's after.
        entry = {"parentUuid": f"5e1d{self.n - 1:028x}", **self.meta, **({"type": kind} if kind == "user" else {}),
                 "message": message, **({} if kind == "user" else extra), "type": kind, "uuid": f"5e1d{self.n:028x}",
                 "timestamp": f"2026-11-30T10:{self.n // 600 % 60:02d}:00.000Z", **(extra if kind == "user" else {})}
        return json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"

    def message(self, i: int) -> Iterator[bytes]:
        rng = self.rng
        usage = {"input_tokens": rng.randrange(2, 40), "cache_creation_input_tokens": rng.randrange(0, 20_000),
                 "cache_read_input_tokens": rng.randrange(10_000, 180_000),
                 "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
                 "output_tokens": rng.randrange(1, 4000), "service_tier": "standard"}
        usage["cache_creation"]["ephemeral_1h_input_tokens"] = usage["cache_creation_input_tokens"]
        task = i % 40 == 39
        blocks = []
        if rng.random() < 0.6:
            blocks.append({"type": "thinking", "thinking": _text(rng, _size(rng, 600, 8000)), "signature": _SIGNATURE})
        if rng.random() < 0.7:
            blocks.append({"type": "text", "text": _text(rng, _size(rng, 300, 6000))})
        tool = {"type": "tool_use", "id": f"toolu_{i:024d}", "name": "Task" if task else "Edit", "input": {
            "file_path": "/home/dev/project/src/app/handlers.py", "old_string": _text(rng, _size(rng, 400, 8000)),
            "new_string": _text(rng, _size(rng, 400, 8000))}}
        if i % 50 == 7:  # a tool input with a "usage" key of its own, before the message's
            tool["input"]["usage"] = {"input_tokens": 1, "note": "a made-up limit"}
        blocks.append(tool)
        model = MODELS[i % len(MODELS)] if i % 97 == 0 else MODELS[0]
        for block in blocks:
            yield self._entry("assistant", {
                "model": model, "id": f"msg_01{i:022d}", "type": "message", "role": "assistant", "content": [block],
                "stop_reason": "tool_use" if block is tool else None, "stop_sequence": None, "usage": usage},
                requestId=f"req_011C{i:020d}")
        result = _text(rng, _size(rng, 6000, 300_000))
        extra = {"toolUseResult": {"status": "completed", "content": [{"type": "text", "text": result}],
                                   "totalTokens": 51_234, "usage": {"input_tokens": 12, "output_tokens": 3456}}
                 if task else {"stdout": result, "stderr": "", "interrupted": False, "isImage": False}}
        yield self._entry("user", {"role": "user", "content": [
            {"tool_use_id": tool["id"], "type": "tool_result", "content": result}]}, **extra)
        if i % 25 == 24:
            yield self._entry("user", {"role": "user", "content": "now check the token usage of the cache again"})

    def lines(self, size: int) -> Iterator[bytes]:
        """About ``size`` bytes of whole messages, numbered on from the ones before (a session goes on:
        a message id is never written twice)."""
        written = 0
        while written < size:
            for line in self.message(self.messages):
                written += len(line)
                yield line
            self.messages += 1


def write(path, size: int, seed: int = 1) -> None:
    with open(path, "wb") as fh:
        batch: list[bytes] = []
        for line in Session(seed).lines(size):
            batch.append(line)
            if len(batch) >= 256:
                fh.write(b"".join(batch))
                batch.clear()
        fh.write(b"".join(batch))


if __name__ == "__main__":
    out = sys.stdout.buffer
    for chunk in Session().lines(int(sys.argv[1])):
        out.write(chunk)
