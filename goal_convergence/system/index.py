"""A small summary of every goal, so the hooks' fast path never parses goal files, and the
questions the fast path asks of it: which goal a session is bound to, which project a folder is in.

Hooks run on every turn of every session; this module uses the standard library only. The index
is a cache: each entry remembers the size, mtime and inode of the goal file it summarises, and a
reader that sees any difference treats the index as stale (``read`` returns None) so the caller
refreshes it through the store, re-reading only the files whose stamp changed (``scan``).

A Stop or SessionEnd of a session with no goal must not cost more with 10,000 goals than with
none, so the active goal of each session is also named by one small file,
``goals/sessions/<session_id>`` (``binding``): the store writes it under the goal's lock whenever
a goal's state or session changes, and every refresh of the index reconciles the folder with the
summaries. The folder exists only once it is complete; until then the fast path asks the index.
"""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path
from typing import Any

OPEN_STATES = ("active", "paused", "escalated")
STATES = ("active", "paused", "converged", "escalated", "failed")
GOAL_ID_RE = re.compile(r"^goal-[a-z0-9]{8}$")
# A session id is a file name here: Claude Code's are UUIDs; anything else is asked of the index.
SESSION_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def home() -> Path:
    env = os.environ.get("GOAL_CONVERGENCE_HOME")
    return Path(env) if env else Path.home() / ".claude"


def index_path(root: Path) -> Path:
    return root / "goals" / "index.json"


def _stamp(st: os.stat_result) -> list[int]:
    # Every write renames a new file into place, so the inode changes even when two writes land in
    # the same mtime tick with the same size. The mode and owner are in it too: a goal file made
    # writable by others, or given to another user, is read again (and refused: files.untrusted).
    return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode, st.st_uid]


def file_stamp(path: Path) -> list[int]:
    return _stamp(path.stat())


def cached(root: Path) -> dict[str, dict[str, Any]]:
    """The index as it was last written (entries by goal id), whatever its age; {} when unusable."""
    try:
        with open(index_path(root), encoding="utf-8") as fh:
            entries = json.load(fh)["goals"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return {}
    return {k: v for k, v in entries.items() if isinstance(v, dict)} if isinstance(entries, dict) else {}


def scan(root: Path) -> tuple[dict[str, list[int]], list[tuple[str, int]]]:
    """The stamp of every goal file, and the temp files (name, mtime in ns) that writes left behind."""
    on_disk: dict[str, list[int]] = {}
    temps: list[tuple[str, int]] = []
    with os.scandir(root / "goals") as it:
        for entry in it:
            name = entry.name
            try:
                if name.endswith(".json") and GOAL_ID_RE.fullmatch(name[:-5]):
                    on_disk[name[:-5]] = _stamp(entry.stat(follow_symlinks=False))  # a planted link: read as itself
                elif name.startswith(".") and name.endswith(".tmp") and entry.is_file(follow_symlinks=False):
                    temps.append((name, entry.stat(follow_symlinks=False).st_mtime_ns))
            except FileNotFoundError:
                continue  # gone since the folder was listed: a write that renamed its temp file, a goal moved away
    return on_disk, temps


def fresh(root: Path) -> list[dict[str, Any]] | None:
    """Every goal's summary when the index is up to date (each goal file's stamp its entry's, the binding
    files in place); None when it is not, and reindex.py must bring it up to date. Needs nothing but this
    module, so a SessionStart over 1,000 goals imports no more than a Stop does."""
    try:
        on_disk, temps = scan(root)
    except OSError:
        return None
    entries = cached(root)
    if temps or entries.keys() != on_disk.keys() or changed(entries, on_disk) or not sessions_dir(root).is_dir():
        return None
    return list(entries.values())


def changed(entries: dict[str, dict[str, Any]], on_disk: dict[str, list[int]]) -> list[str]:
    """The goals whose file is not the one their index entry summarises."""
    return [gid for gid, stamp in on_disk.items() if entries.get(gid, {}).get("stamp") != stamp]


# ---- which goal a session works on ---------------------------------------------------------

def sessions_dir(root: Path) -> Path:
    return root / "goals" / "sessions"


def binding(root: Path, session_id: str) -> bool | None:
    """Whether an active goal is bound to ``session_id``: one failed open when it is not. None when the
    binding files cannot tell (not written yet, or an id that cannot be a file name)."""
    if not SESSION_RE.fullmatch(session_id):
        return None
    folder = sessions_dir(root)
    try:
        os.close(os.open(folder / session_id, os.O_RDONLY))
        return True
    except FileNotFoundError:
        pass
    except OSError:
        return None
    try:
        os.stat(folder)
        return False
    except FileNotFoundError:
        return False if not (root / "goals").exists() else None
    except OSError:
        return None


def bind(root: Path, session_id: str | None, goal_id: str, bound: bool) -> None:
    """Name ``goal_id`` as the active goal of ``session_id`` (or stop naming it); call it under the goal's lock."""
    if not session_id or not SESSION_RE.fullmatch(session_id):
        return
    path = sessions_dir(root) / session_id
    try:
        current = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        current = None
    if bound and current != goal_id:
        _write_small(path, goal_id)
    elif not bound and current == goal_id:
        path.unlink(missing_ok=True)


def sync_bindings(root: Path, entries: dict[str, dict[str, Any]]) -> None:
    """Make the binding files say what the summaries say. A missing folder is built whole beside
    it and renamed into place, so the fast path never trusts a half-written one. A goal whose file
    changed since its summary was made is left alone: its writer set its binding under its lock."""
    want = {s["sessionId"]: gid for gid, s in entries.items()
            if working(s) and isinstance(s.get("sessionId"), str) and SESSION_RE.fullmatch(s["sessionId"])}
    folder = sessions_dir(root)

    def current(gid: str) -> bool:
        try:
            return entries.get(gid, {}).get("stamp") == file_stamp(root / "goals" / f"{gid}.json")
        except OSError:
            return gid not in entries
    if not folder.is_dir():
        # Unique per call, not per process: two threads of one `goal run` may both find it missing.
        staging = folder.with_name(f".sessions.{os.getpid()}.{threading.get_ident()}")
        staging.mkdir(mode=0o700, exist_ok=True)
        for session_id, gid in want.items():
            _write_small(staging / session_id, gid)
        try:
            os.rename(staging, folder)
            return
        except OSError:  # another process made it first: reconcile with theirs
            for leftover in staging.iterdir():
                leftover.unlink()
            staging.rmdir()
    for path in folder.iterdir():
        if path.name not in want and not path.name.startswith("."):
            try:
                named = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                named = ""
            if not GOAL_ID_RE.fullmatch(named) or current(named):
                path.unlink(missing_ok=True)
    for session_id, gid in want.items():
        if current(gid):
            bind(root, session_id, gid, True)


def _write_small(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)  # never through a planted link
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def bound_to_session(summaries: list[dict[str, Any]], session_id: str | None,
                     states: tuple[str, ...] = ("active",)) -> list[dict[str, Any]]:
    """The summaries of the goals bound to ``session_id`` in one of ``states``, in index order. At
    most one of them is active: a session works on one goal at a time (goals.py refuses a second)."""
    if not session_id:
        return []  # a goal without a session is bound to none, and never to a session that has no id
    return [s for s in summaries if s.get("sessionId") == session_id
            and (s.get("state") in states or ("active" in states and working(s)))]


def project_root(path: Path | str | None = None) -> Path:
    """The git top level of ``path`` (default: cwd), or the folder itself outside git. Found by
    looking for ``.git`` (a folder, or the file of a worktree or submodule), not by running git:
    the hooks' fast path needs it at every session start."""
    folder = Path(path or os.getcwd()).expanduser().resolve()
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return folder


def check(goal_doc: Any, goal_id: str) -> None:
    """Raise ValueError unless ``goal_doc`` has, with the right types, every field a summary takes
    from it: a summary is made without the models, and must never hold what they would refuse."""
    if not isinstance(goal_doc, dict):
        raise ValueError("the document is not an object")
    if goal_doc.get("goalId") != goal_id:
        raise ValueError(f"goalId {goal_doc.get('goalId')!r} does not match the file name {goal_id}")
    for key in ("objective", "projectRoot", "createdAt"):
        if not isinstance(goal_doc.get(key), str) or not goal_doc[key]:
            raise ValueError(f"{key}: missing or not a non-empty string")
    if goal_doc.get("state", "active") not in STATES:
        raise ValueError(f"state: {goal_doc.get('state')!r} is not one of {', '.join(STATES)}")
    for key, kind in (("spent", dict), ("budget", dict), ("history", list), ("escalation", dict)):
        if goal_doc.get(key) is not None and not isinstance(goal_doc[key], kind):
            raise ValueError(f"{key}: not a{'n object' if kind is dict else ' list'}")
    if not isinstance(goal_doc.get("sessionId") or "", str):
        raise ValueError("sessionId: not a string")
    spent = goal_doc.get("spent") or {}
    for key in ("iterations", "makerDollars", "oracleDollars"):
        if type(spent.get(key, 0)) not in (int, float) or spent.get(key, 0) < 0:
            raise ValueError(f"spent.{key}: not a number >= 0")
    for it in goal_doc.get("history") or []:
        if not isinstance(it, dict) or not isinstance(it.get("decision"), dict):
            raise ValueError("history: an iteration without a decision")


def summary(goal_doc: dict[str, Any], stamp: list[int], tampered: str | None = None) -> dict[str, Any]:
    """What the hooks need to know about a goal without reading it; ``tampered``: why its file
    cannot be trusted (seal.py), when it cannot."""
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
        **({"tampered": tampered} if tampered else {}),
        "stamp": stamp,
    }


def working(s: dict[str, Any]) -> bool:
    """Whether the loop works this goal at its session's next stop: an active one, or a tampered one
    whatever its file says (the engine escalates it: a file edited to say converged must not let
    the session end as if it were)."""
    return s.get("state") == "active" or bool(s.get("tampered"))
