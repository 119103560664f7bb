"""`goal hook gemini session-start|before-agent|before-tool|after-agent|session-end`: Gemini CLI's hook JSON on stdin.

As for Claude Code (claude_code/dispatch.py): the fast path answers first, from the standard library; the
slow path (hooks.py) is imported only when a goal needs touching. A hook never breaks the session it runs
in: a failure is logged and shown in one line (``systemMessage``), and the exit code is always 0. Gemini CLI
awaits SessionEnd's hooks (within their timeout), so that work runs here, not in a detached child.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from ..claude_code.dispatch import serve, stdout_on_stderr
from . import fast


def main(argv: list[str]) -> int:
    return serve(argv, fast.EVENTS, "Gemini CLI ", _answer, _failed, _emit)


def _answer(event: str, data: bytes) -> dict[str, Any]:
    payload = fast.claude_input(event, fast.decode(data))
    answer = fast.answer(event, payload)
    return fast.gemini_answer(event, _slow(event, payload)) if answer is None else answer


def _failed(event: str, exc: BaseException) -> dict[str, Any]:
    from ..claude_code.fast import failure_line

    return {"systemMessage": failure_line(f"gemini {event}", exc)}


def _slow(event: str, payload: dict[str, Any]) -> dict[str, Any]:
    with stdout_on_stderr():
        from . import hooks  # pydantic and the loop: only when there is work

        return hooks.run(event, payload)


def _emit(answer: dict[str, Any]) -> None:
    # Always an object: with nothing on stdout Gemini CLI would read stderr as the answer.
    sys.stdout.write(json.dumps(answer, ensure_ascii=False) + "\n")
    sys.stdout.flush()
