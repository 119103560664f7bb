"""Gemini CLI's hooks in Claude Code's terms, and the answers back: the adapter's fast path, standard library only.

Gemini CLI (checked against 0.61.0) sends each command hook a JSON object with ``session_id``,
``transcript_path``, ``cwd``, ``hook_event_name`` and the event's own fields: AfterAgent ``prompt`` and
``prompt_response`` (the turn's last text), BeforeTool ``tool_name`` and ``tool_input``, BeforeAgent
``prompt``, SessionStart ``source`` (startup|resume|clear), SessionEnd ``reason``. Each event is one of
the Claude Code hooks the loop already answers (fast.py, pretool.py, hooks.py), so the adapter only
renames fields on the way in and reshapes the answer on the way out:

- AfterAgent is Stop. Feedback that keeps the agent working is ``{"decision": "deny", "reason": ...}``:
  Gemini CLI sends the reason to the model as the next prompt, in the same turn.
- BeforeTool is PreToolUse. A denied call is ``{"decision": "deny", "reason": ...}``, the reason shown to
  the model as the tool's error. Gemini's tools are mapped to Claude Code's (``TOOLS``), so the same rules
  (shellscan.py, guarded.py) judge them.
- SessionStart's ``hookSpecificOutput.additionalContext`` is the same field in both; Gemini CLI puts it
  before the first prompt.
- BeforeAgent carries the `/goal` command (``COMMAND_OPEN``...``COMMAND_CLOSE`` in the prompt, from
  commands/goal.toml), which is Claude Code's UserPromptExpansion: the raw arguments reach the loop
  without a shell.

Gemini CLI parses a hook's stdout as its answer, and its stderr when stdout is empty (as a message to show,
or a deny when the exit code is not 0): so a hook always prints a JSON object, ``{}`` at least.
"""

from __future__ import annotations

import json
import re
from typing import Any

# Gemini CLI's event (as hooks.json names it to `goal hook gemini <event>`) -> Claude Code's.
EVENTS = {"session-start": "session-start", "before-agent": "prompt-expansion", "before-tool": "pre-tool-use",
          "after-agent": "stop", "session-end": "session-end"}
COMMAND = "/goal"
COMMAND_OPEN = "[goal-convergence:goal]"
COMMAND_CLOSE = "[/goal-convergence:goal]"
_HOOK_CONTEXT = re.compile(r"\A\s*(?:<hook_context>.*?</hook_context>\s*)*", re.S)
# Gemini CLI's tools -> Claude Code's tool and the input field the rules read.
TOOLS = {"run_shell_command": "Bash", "write_file": "Write", "replace": "Edit", "read_file": "Read",
         "glob": "Glob", "grep_search": "Grep", "list_directory": "Grep", "read_many_files": "Glob"}
# What names the judge's commands in the messages the loop writes for Claude Code, as a Gemini user types it.
_NAMES = (("/goal-convergence:goal", COMMAND), ("/goal-convergence:triage", "goal triage"),
          ("/goal-convergence:heartbeat", "goal heartbeat"))


def claude_input(event: str, payload: dict[str, Any]) -> dict[str, Any]:
    """Gemini CLI's hook input as the Claude Code hook input the loop reads."""
    out = {k: payload[k] for k in ("session_id", "transcript_path", "cwd", "source") if k in payload}
    if not out.get("transcript_path"):
        out.pop("transcript_path", None)  # Gemini sends "" when the session records no chat
    if event == "after-agent" and isinstance(payload.get("prompt_response"), str):
        out["last_assistant_message"] = payload["prompt_response"]
    if event == "before-tool":
        out.update(tool_name=TOOLS.get(str(payload.get("tool_name")), payload.get("tool_name")),
                   tool_input=tool_input(payload.get("tool_name"), payload.get("tool_input")))
    if event == "before-agent":
        raw = command_args(payload.get("prompt"))
        if raw is not None:
            out.update(command_name="goal", command_args=raw)
    return out


def tool_input(tool: object, given: object) -> object:
    """A Gemini tool's input with the fields named as Claude Code's tool of the same reach names them."""
    if not isinstance(given, dict):
        return given
    if tool in ("glob", "grep_search", "list_directory"):
        folder = given.get("dir_path") or given.get("path")
        pattern = given.get("pattern") if tool == "glob" else None
        return {k: v for k, v in (("path", folder), ("pattern", pattern)) if v}
    if tool == "read_many_files":  # one Glob a pattern (``answer`` refuses the call when any is refused)
        include = given.get("include")
        return [{"pattern": p} for p in (include if isinstance(include, list) else [include]) if isinstance(p, str)]
    return given


def command_args(prompt: object) -> str | None:
    """The raw arguments of a `/goal` command in a prompt (expanded from goal.toml, or left as typed when Gemini
    CLI did not expand it: a headless prompt that SessionStart's context came before), else None."""
    if not isinstance(prompt, str):
        return None
    start = prompt.find(COMMAND_OPEN)
    if start >= 0:
        end = prompt.rfind(COMMAND_CLOSE)
        return prompt[start + len(COMMAND_OPEN):end if end > start else None].strip()
    typed = prompt[_HOOK_CONTEXT.match(prompt).end():]
    if typed == COMMAND or typed.startswith(COMMAND + " ") or typed.startswith(COMMAND + "\n"):
        return typed[len(COMMAND):].strip()
    return None


def gemini_answer(event: str, answer: dict[str, Any]) -> dict[str, Any]:
    """Claude Code's hook answer as Gemini CLI reads it."""
    out: dict[str, Any] = {}
    if isinstance(answer.get("systemMessage"), str):
        out["systemMessage"] = in_gemini(answer["systemMessage"])
    specific = answer.get("hookSpecificOutput") or {}
    context = specific.get("additionalContext")
    if specific.get("permissionDecision") == "deny":
        out.update(decision="deny", reason=in_gemini(str(specific.get("permissionDecisionReason") or "")))
    elif event == "after-agent" and isinstance(context, str):
        out.update(decision="deny", reason=in_gemini(context))  # the reason is the next prompt
    elif isinstance(context, str):
        name = "BeforeAgent" if event == "before-agent" else "SessionStart"
        out["hookSpecificOutput"] = {"hookEventName": name, "additionalContext": in_gemini(context)}
    return out


def in_gemini(text: str) -> str:
    for claude, gemini in _NAMES:
        text = text.replace(claude, gemini)
    return text


def answer(event: str, payload: dict[str, Any]) -> dict[str, Any] | None:
    """The answer when no goal needs touching (in Gemini's form), or None when the slow path has work to do."""
    from ..claude_code import fast

    claude_event = EVENTS[event]
    if claude_event == "prompt-expansion":
        return {} if "command_name" not in payload else None
    if isinstance(payload.get("tool_input"), list):  # several reads in one call: the first refused refuses it
        answers = (answer(event, {**payload, "tool_input": one}) for one in payload["tool_input"])
        return next((found for found in answers if found), {})
    found = fast.answer(claude_event, json.dumps(payload).encode())
    return None if found is None else gemini_answer(event, found)


def decode(data: bytes) -> dict[str, Any]:
    """The hook's input; anything that is not a JSON object is an empty one (no session: nothing is done)."""
    try:
        payload = json.loads(data)
    except (ValueError, RecursionError):
        return {}
    return payload if isinstance(payload, dict) else {}


