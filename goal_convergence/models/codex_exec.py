"""What Codex CLI prints headless (`codex exec --json`: one JSON event a line), as the codex maker and the
codex oracle read it: the session's id, its last message, its token usage and whether a turn failed."""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass
class ExecResult:
    thread_id: str | None = None
    message: str | None = None  # the last agent message
    input_tokens: int = 0  # cached ones included, as OpenAI counts them
    cached_input_tokens: int = 0
    output_tokens: int = 0
    error: str | None = None  # the last error event or failed turn, if any
    completed: bool = False  # a turn.completed was seen

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def usage(self) -> dict[str, int]:
        """The usage in the keys of a rollout's records (storage/rollout.py prices them)."""
        return {"input_tokens": self.input_tokens, "cached_input_tokens": self.cached_input_tokens,
                "output_tokens": self.output_tokens}


def parse(text: str) -> ExecResult:
    """The events of ``text``; lines that are not JSON objects (a warning on stdout) are skipped."""
    result = ExecResult()
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        kind = event.get("type")
        if kind == "thread.started" and isinstance(event.get("thread_id"), str):
            result.thread_id = event["thread_id"]
        elif kind == "item.completed" and isinstance(event.get("item"), dict):
            item = event["item"]
            if item.get("type") == "agent_message" and isinstance(item.get("text"), str):
                result.message = item["text"]
        elif kind == "turn.completed":
            usage = event.get("usage") if isinstance(event.get("usage"), dict) else {}
            result.completed = True
            result.input_tokens += _int(usage.get("input_tokens"))
            result.cached_input_tokens += _int(usage.get("cached_input_tokens"))
            result.output_tokens += _int(usage.get("output_tokens"))
        elif kind in ("turn.failed", "error"):
            error = event.get("error") if isinstance(event.get("error"), dict) else event
            result.error = str(error.get("message") or kind)
    return result


def _int(value: object) -> int:
    return value if isinstance(value, int) and value > 0 else 0
