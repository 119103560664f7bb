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

from ..claude_code.dispatch import stdout_on_stderr
from . import fast


def main(argv: list[str]) -> int:
    event = argv[0] if len(argv) == 1 else None
    if event not in fast.EVENTS:
        _emit({"systemMessage": f"goal-convergence: unknown Gemini CLI hook {' '.join(argv)!r}; expected one of "
                                f"{', '.join(fast.EVENTS)}"})
        return 0
    try:
        payload = fast.claude_input(event, fast.decode(sys.stdin.buffer.read()))
        answer = fast.answer(event, payload)
        if answer is None:
            answer = fast.gemini_answer(event, _slow(event, payload))
    except BaseException as exc:  # noqa: BLE001 - whatever it is, the user's session carries on
        from ..claude_code.fast import failure_line

        answer = {"systemMessage": failure_line(f"gemini {event}", exc)}
    _emit(answer)
    return 0


def _slow(event: str, payload: dict[str, Any]) -> dict[str, Any]:
    with stdout_on_stderr():
        from . import hooks  # pydantic and the loop: only when there is work

        return hooks.run(event, payload)


def _emit(answer: dict[str, Any]) -> None:
    # Always an object: with nothing on stdout Gemini CLI would read stderr as the answer.
    sys.stdout.write(json.dumps(answer, ensure_ascii=False) + "\n")
    sys.stdout.flush()
