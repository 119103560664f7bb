"""PreToolUse for a session that owns an active goal: keep its maker away from the judge's controls.

A goal whose maker can change its own judge proves nothing, and a maker inside Claude Code has Bash
and the `goal` CLI. So before each tool call of that session this hook denies (Claude Code's
``permissionDecision: "deny"``, with a reason the model reads):

- Bash that runs goal-convergence (its CLI, its package, the plugin's launcher), except
  ``goal blocked "why"``, or names its files under the home (shellscan.py, guarded.py);
- Edit, Write, MultiEdit and NotebookEdit of a file under the guarded paths, and Read, Grep and Glob
  there: the goal file holds the hidden expectation, and the seal's key must never be read.

Everything else gets no answer, which lets the call through Claude Code's own permission flow. The
person's slash commands (UserPromptExpansion) and ``!`` shell lines are no tool calls and stay free.

It also records the Claude Code process as the goal's maker (system/insiders.py), so that the `goal`
CLI refuses goal-changing commands from anything the session runs, however the command was spelled.

A hook never breaks the session: a failure of this one lets the call through and says so in one
line (dispatch.py). For a deny hook that is the choice that keeps the user's session working; the
CLI's refusal and the seal still hold behind it.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from ...system import index
from . import shellscan
from .guarded import Guarded

EDITS = {"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}
SEARCHES = ("Grep", "Glob")
COMMAND = "/goal-convergence:goal"
# Processes between Claude Code and this code: the plugin's launcher, the `goal` CLI, a shell.
SHELL_NAMES = frozenset({"sh", "bash", "dash", "zsh"})


def answer(payload: dict[str, Any], session_id: str, home: Path) -> dict[str, object]:
    """Claude Code's answer to the tool call in ``payload``: a deny with its reason, or {} to let it through."""
    goal_id = bound_goal(home, session_id)
    if goal_id is None:
        return {}
    cwd = payload.get("cwd")
    refused = refusal(payload.get("tool_name"), payload.get("tool_input"),
                      Guarded(home, cwd if isinstance(cwd, str) and os.path.isabs(cwd) else os.getcwd()))
    record(home, goal_id)
    if refused is None:
        return {}
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": reason(goal_id, refused)}}


def bound_goal(home: Path, session_id: str) -> str | None:
    """The active goal bound to the session, from its binding file (or the index, before that folder exists)."""
    try:
        named = (index.sessions_dir(home) / session_id).read_text(encoding="utf-8").strip()
        return named if index.GOAL_ID_RE.fullmatch(named) else None
    except (OSError, UnicodeDecodeError, ValueError):
        pass
    found = index.bound_to_session(list(index.cached(home).values()), session_id)
    return next((s["goalId"] for s in found), None)


def refusal(tool: object, tool_input: object, guarded: Guarded) -> str | None:
    """What the call reaches of the judge, in a few words, or None when it may run."""
    if not isinstance(tool_input, dict):
        return None
    if tool == "Bash":
        command = tool_input.get("command")
        return shellscan.reaches(command, guarded) if isinstance(command, str) else None
    if tool in EDITS or tool == "Read":
        path = tool_input.get(EDITS.get(str(tool), "file_path"))
        reached = guarded.reaches(path, folder_too=False) if isinstance(path, str) and path else None
        return f"{'reads' if tool == 'Read' else 'writes'} `{reached}`, one of goal-convergence's files" \
            if reached else None
    if tool in SEARCHES:
        folder = tool_input.get("path")
        folder = folder if isinstance(folder, str) and folder else guarded.cwd
        pattern = tool_input.get("pattern") if tool == "Glob" else None
        pattern = pattern if isinstance(pattern, str) else ""
        reached = guarded.reaches(os.path.join(folder, pattern)) if pattern else None
        if reached or guarded.holds(folder):
            return f"searches `{reached or guarded.resolve(folder)}`, which holds goal-convergence's files"
    return None


def reason(goal_id: str, refused: str) -> str:
    return (f"goal-convergence refused this call: it {refused}. Goal {goal_id} is active in this session, and "
            f"the maker of a goal cannot change the goal, its judge or their files, nor read them. A person must "
            f"change the goal (from their own shell, or with {COMMAND}). Work on the objective in the project. "
            f"If the goal cannot be met as written, say so: run `goal blocked \"why\"`, and the goal goes to a "
            f"person with your reason.")


def record(home: Path, goal_id: str) -> None:
    """Record the Claude Code process that runs this hook as the maker of ``goal_id``; a failure to record is
    no reason to let the tool call through, so it is only logged."""
    try:
        from ...system import insiders

        pid = session_process()
        if pid is not None:
            insiders.register(home, pid, goal_id)
    except Exception as exc:  # noqa: BLE001 - the deny decision is made; the CLI's refusal is the next layer
        from ...system.log import log_error

        with contextlib.suppress(Exception):
            log_error("hook pre-tool-use", f"could not record the session's process as a maker: {exc!r}")


def session_process(pid: int | None = None) -> int | None:
    """The Claude Code process above this one: the first ancestor that is not the plugin's launcher, the
    `goal` CLI or a shell between them."""
    from ...system import orphans

    current = orphans.stat(pid or os.getpid())
    for _ in range(8):
        if current is None or current.ppid <= 1:
            return None
        parent = current.ppid
        if not _ours(parent):
            return parent
        current = orphans.stat(parent)
    return None


def _ours(pid: int) -> bool:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    words = [os.path.basename(a.decode("utf-8", "replace")) for a in argv if a]
    return bool(words) and (words[0] in SHELL_NAMES or "goal-launch.py" in words or "goal" in words[:2]
                            or "goal_convergence" in words)
