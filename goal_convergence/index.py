"""A small summary of every goal, so the hooks' fast path never parses goal files, and the
questions the fast path asks of it: which goal a session is bound to, which project a folder is in.

Hooks run on every turn of every session; this module uses the standard library only. The index
is a cache: each entry remembers the size and mtime of the goal file it summarises, and a reader
that sees any difference treats the whole index as stale (``read`` returns None) so the caller
rebuilds it from the goal files through the store.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

OPEN_STATES = ("active", "paused", "escalated")
GOAL_ID_RE = re.compile(r"^goal-[a-z0-9]{8}$")


def home() -> Path:
    env = os.environ.get("GOAL_CONVERGENCE_HOME")
    return Path(env) if env else Path.home() / ".claude"


def index_path(root: Path) -> Path:
    return root / "goals" / "index.json"


def _stamp(st: os.stat_result) -> list[int]:
    # Every write renames a new file into place, so the inode changes even when two writes land in
    # the same mtime tick with the same size.
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def file_stamp(path: Path) -> list[int]:
    return _stamp(path.stat())


def read(root: Path) -> list[dict[str, Any]] | None:
    """The summaries of all goals, or None when the index is missing or out of date."""
    goals_dir = root / "goals"
    try:
        with open(index_path(root), encoding="utf-8") as fh:
            entries = json.load(fh)["goals"]
        on_disk = {}
        with os.scandir(goals_dir) as it:
            for entry in it:
                if entry.name.endswith(".json") and GOAL_ID_RE.fullmatch(entry.name[:-5]):
                    on_disk[entry.name[:-5]] = _stamp(entry.stat())
    except FileNotFoundError:
        return [] if not goals_dir.exists() else None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(entries, dict) or on_disk.keys() != entries.keys():
        return None
    if any(not isinstance(e, dict) or e.get("stamp") != on_disk[gid] for gid, e in entries.items()):
        return None
    return list(entries.values())


def bound_to_session(summaries: list[dict[str, Any]], session_id: str | None,
                     states: tuple[str, ...] = ("active",)) -> list[dict[str, Any]]:
    """The summaries of the goals bound to ``session_id`` in one of ``states``, in index order. At
    most one of them is active: a session works on one goal at a time (goals.py refuses a second)."""
    if not session_id:
        return []  # a goal without a session is bound to none, and never to a session that has no id
    return [s for s in summaries if s.get("sessionId") == session_id and s.get("state") in states]


def project_root(path: Path | str | None = None) -> Path:
    """The git top level of ``path`` (default: cwd), or the folder itself outside git. Found by
    looking for ``.git`` (a folder, or the file of a worktree or submodule), not by running git:
    the hooks' fast path needs it at every session start."""
    folder = Path(path or os.getcwd()).expanduser().resolve()
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return folder


def summary(goal_doc: dict[str, Any], stamp: list[int]) -> dict[str, Any]:
    """What the hooks need to know about a goal without reading it."""
    hint = ""
    for it in reversed(goal_doc.get("history") or []):
        if it.get("decision", {}).get("hint"):
            hint = it["decision"]["hint"]
            break
    spent = goal_doc.get("spent") or {}
    return {
        "goalId": goal_doc["goalId"],
        "objective": goal_doc["objective"],
        "state": goal_doc.get("state", "active"),
        "stopReason": goal_doc.get("stopReason"),
        "sessionId": goal_doc.get("sessionId"),
        "projectRoot": goal_doc["projectRoot"],
        "iterations": spent.get("iterations", 0),
        "maxIterations": (goal_doc.get("budget") or {}).get("maxIterations"),
        "dollars": round(spent.get("makerDollars", 0) + spent.get("oracleDollars", 0), 6),
        "lastHint": hint,
        "triageId": (goal_doc.get("escalation") or {}).get("triageId"),
        "createdAt": goal_doc["createdAt"],
        "stamp": stamp,
    }
