"""Inside a Claude Code session, messages name the slash commands, not the `goal` CLI.

The library's messages (and click's usage errors from a passed-through command) say "start one with
`goal new`", "next: `goal triage act ...`", "Try 'goal triage act --help'". On the plugin's
automatic route `goal` is not on PATH, so every answer a hook gives is rewritten here, in one place,
to the commands the session has. A command quoted (backticks, quotes) or after click's "Usage:" is
rewritten; `goal` in prose is not. `goal run` has no slash command and is left as it is.
"""

from __future__ import annotations

import re
from typing import Any

PLUGIN = "/goal-convergence"
_QUOTED = r"(?:(?<=[`'\"])|(?<=Usage: ))goal "
_RULES = [
    (re.compile(_QUOTED + r"new(?: OBJECTIVE)?\b"), f"{PLUGIN}:goal OBJECTIVE"),
    (re.compile(_QUOTED + r"(triage|heartbeat)\b"), PLUGIN + r":\1"),
    (re.compile(_QUOTED + r"(pause|resume|status|list|abandon|check|help)\b"), PLUGIN + r":goal \1"),
]


def in_session(text: str) -> str:
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text


def answer_in_session(answer: dict[str, Any]) -> dict[str, Any]:
    """A hook's answer with every text the user or the model reads rewritten."""
    out = {k: in_session(v) if k in ("systemMessage", "reason") and isinstance(v, str) else v for k, v in answer.items()}
    specific = out.get("hookSpecificOutput")
    if isinstance(specific, dict) and isinstance(specific.get("additionalContext"), str):
        out["hookSpecificOutput"] = {**specific, "additionalContext": in_session(specific["additionalContext"])}
    return out
