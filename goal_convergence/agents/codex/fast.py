"""Codex's hooks' fast path: the answer when no goal needs touching, from the standard library alone.

Codex's hook input carries the fields Claude Code's does (``session_id``, ``transcript_path``, ``cwd``,
``source``; PreToolUse's ``tool_name`` is ``Bash`` with ``tool_input.command``, as in Claude Code), and
its SessionStart and PreToolUse answers take the same shape, so Claude Code's fast path answers here
too; only the name of the goal command in the texts differs (``$goal``, the plugin's skill, instead of
the slash command). UserPromptSubmit has work only when the prompt is a ``$goal`` command.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..claude_code import fast as claude_fast

EVENTS = ("session-start", "user-prompt-submit", "pre-tool-use", "stop")
SKILL = "$goal"
# `$goal ARGS`, or the skill's name with the plugin's before it, at the start of the prompt
GOAL_PROMPT = re.compile(r"\s*\$(?:goal-convergence:)?goal(?=\s|$)\s*(.*)", re.S)


def answer(event: str, data: bytes) -> dict[str, object] | None:
    """The answer when no goal needs touching, or None when the slow path has work to do."""
    if event == "user-prompt-submit":
        try:
            prompt = json.loads(data).get("prompt")
        except (ValueError, AttributeError, RecursionError):
            return None
        return None if isinstance(prompt, str) and GOAL_PROMPT.match(prompt) else {}
    found = claude_fast.answer(event, data)
    return None if found is None else in_codex(found)


def goal_arguments(prompt: str) -> str | None:
    """The argument text of a ``$goal`` prompt, or None when the prompt is no goal command."""
    found = GOAL_PROMPT.match(prompt)
    return found.group(1) if found else None


def in_codex(answer: Any) -> Any:
    """An answer with every text naming the slash command rewritten to the skill Codex has."""
    if isinstance(answer, str):
        return answer.replace(claude_fast.COMMAND, SKILL)
    if isinstance(answer, dict):
        return {k: in_codex(v) for k, v in answer.items()}
    if isinstance(answer, list):
        return [in_codex(v) for v in answer]
    return answer
