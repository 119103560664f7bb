"""`goal hook codex session-start|user-prompt-submit|pre-tool-use|stop`: Codex's hook JSON on stdin.

As for Claude Code (agents/claude_code/dispatch.py): the fast path answers first, the slow path
(hooks.py) is imported only when it finds work, and a hook never breaks the session: any failure is
logged and reported in one line (``systemMessage``), and the exit code is always 0. Codex has no
SessionEnd hook: a session's spend is charged at each Stop, which reads the rollout to its end.
"""

from __future__ import annotations

import json
import sys

from ..claude_code import fast as claude_fast
from ..claude_code.dispatch import serve, stdout_on_stderr
from . import fast


def main(argv: list[str]) -> int:
    return serve(argv, fast.EVENTS, "Codex ", _answer, _failed, _emit)


def _answer(event: str, data: bytes) -> dict[str, object]:
    answer = fast.answer(event, data)
    return _slow(event, data) if answer is None else answer


def _failed(event: str, exc: BaseException) -> dict[str, object]:
    return {"systemMessage": fast.in_codex(claude_fast.failure_line(event, exc))}


def _slow(event: str, data: bytes) -> dict[str, object]:
    with stdout_on_stderr():
        from . import hooks  # pydantic and the loop: only when there is work

        return hooks.run(event, data)


def _emit(answer: dict[str, object]) -> None:
    if answer:
        sys.stdout.write(json.dumps(answer, ensure_ascii=False) + "\n")
        sys.stdout.flush()
