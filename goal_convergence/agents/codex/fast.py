"""Codex's hooks' fast path: the answer when no goal needs touching, from the standard library alone.

Codex's hook input carries the fields Claude Code's does (``session_id``, ``transcript_path``, ``cwd``,
``source``; PreToolUse's ``tool_name`` is ``Bash`` with ``tool_input.command``, as in Claude Code), and
its SessionStart and PreToolUse answers take the same shape, so Claude Code's fast path answers here
too; only the name of the goal command in the texts differs (``$goal``, the plugin's skill, instead of
the slash command). Codex's other way to write files, ``apply_patch`` (its patch text in
``tool_input.command``), is checked as a Write of each file the patch names. UserPromptSubmit has work
only when the prompt is a ``$goal`` command.
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
# The files an apply_patch names: those it adds, updates, deletes or moves to.
PATCHED = re.compile(r"^\*\*\* (?:(?:Add|Update|Delete) File|Move to): (.+?)\s*$", re.M)


def answer(event: str, data: bytes) -> dict[str, object] | None:
    """The answer when no goal needs touching, or None when the slow path has work to do."""
    if event == "user-prompt-submit":
        try:
            prompt = json.loads(data).get("prompt")
        except (ValueError, AttributeError, RecursionError):
            return None
        return None if isinstance(prompt, str) and GOAL_PROMPT.match(prompt) else {}
    if event == "pre-tool-use":
        return _pre_tool_use(data)
    found = claude_fast.answer(event, data)
    return None if found is None else in_codex(found)


def _pre_tool_use(data: bytes) -> dict[str, object]:
    try:
        payload = json.loads(data)
        tool, tool_input = payload.get("tool_name"), payload.get("tool_input")
    except (ValueError, AttributeError, RecursionError):
        return {}
    if tool != "apply_patch" or not isinstance(tool_input, dict) or not isinstance(tool_input.get("command"), str):
        return in_codex(claude_fast.answer("pre-tool-use", data) or {})
    for path in PATCHED.findall(tool_input["command"]):
        one = json.dumps({**payload, "tool_name": "Write", "tool_input": {"file_path": path}}).encode()
        found = claude_fast.answer("pre-tool-use", one) or {}
        if found:
            return in_codex(found)
    return {}


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
