"""Control turns: a turn that only ran a goal-management slash command is not an iteration.

`/goal-convergence:goal status` (list, check, help, report) or any `/goal-convergence:triage ...` typed in
the session a goal is bound to ends with a stop like any other turn; run as an iteration it would
charge the checks and the oracle, count towards the budget and the stuck detection, and block the
session with "not done yet". So the UserPromptExpansion hook marks the turn (``mark``), with the
transcript's size at that moment, and the Stop hook (``only_control``) lets that stop pass without
an iteration when the transcript shows no tool call since: nothing was done that a check could see.
A tool call, even a read, makes the turn an iteration as before. Work left unchecked by an
interrupted turn is checked at the next working turn's stop.

The mark is a small file per session in ``<home>/control/``, taken (deleted) by the next stop.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from ...system import files

# The subcommands of /goal-convergence:goal that only show, check or rewind (a person's move, not the maker's work);
# every triage command is one too.
GOAL_CONTROLS = frozenset({"status", "list", "check", "diff", "rewind", "report", "help"})
MAX_READ = 8 << 20  # a control turn writes little: past this much transcript, it did work


def is_control(name: str, raw: str) -> bool:
    """Whether the plugin command ``name`` with argument text ``raw`` is a goal-management command."""
    first = (raw.split() or ["help"])[0].lower()
    return name == "triage" or (name == "goal" and first in GOAL_CONTROLS)


def _path(home: Path, session_id: str) -> Path:
    # a session id comes from outside: hashed, it is always one safe file name
    return home / "control" / f"{hashlib.sha256(session_id.encode()).hexdigest()[:32]}.json"


def mark(home: Path, session_id: str, transcript_path: str | None) -> None:
    """Record that this session's current turn began with a control command."""
    offset = 0
    if transcript_path:
        try:
            offset = os.stat(transcript_path).st_size
        except OSError:
            offset = 0
    path = _path(home, session_id)
    files.private_folder(path.parent)
    files.write_atomic(path, json.dumps({"transcript": transcript_path, "offset": offset}).encode("utf-8"))


def clear(home: Path, session_id: str) -> None:
    _path(home, session_id).unlink(missing_ok=True)


def only_control(home: Path, session_id: str, transcript_path: str | None) -> bool:
    """Take this session's mark; True when the turn it marked made no tool call up to now."""
    path = _path(home, session_id)
    try:
        marked = json.loads(path.read_text(encoding="utf-8"))
        path.unlink()
    except (OSError, ValueError):
        return False
    if not isinstance(marked, dict) or marked.get("transcript") != transcript_path or not transcript_path:
        return False  # another transcript (a compacted or forked session): count the turn
    return not _tool_call_since(Path(transcript_path), int(marked.get("offset") or 0))


def _tool_call_since(transcript: Path, offset: int) -> bool:
    try:
        with transcript.open("rb") as fh:
            if os.fstat(fh.fileno()).st_size - offset > MAX_READ:
                return True
            fh.seek(offset)
            lines = fh.read().splitlines()
    except OSError:
        return True  # cannot tell: count the turn, as before control turns were told apart
    for line in lines:
        if b'"tool_use"' not in line and b'"function_call"' not in line and b'"toolCalls"' not in line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        payload = entry.get("payload")  # a Codex rollout's line: a response item that calls a tool
        if entry.get("type") == "response_item" and isinstance(payload, dict) and \
                payload.get("type") == "function_call":
            return True
        if entry.get("type") == "gemini" and entry.get("toolCalls"):  # Gemini CLI's chat recording
            return True
        content = (entry.get("message") or {}).get("content") if entry.get("type") == "assistant" else None
        if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_use" for b in content):
            return True
    return False
