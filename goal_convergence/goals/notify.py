"""Notifications: when a goal ends (converged, escalated, failed), once per end.

The end is appended to `events.jsonl` under the home, then each notify command the user set (the
home's `config.toml`, then the goal's project settings; see config.py) runs in the user's shell
with the event as JSON on stdin and GOAL_ID, GOAL_STATE, GOAL_STOP_REASON and GOAL_OBJECTIVE in
its environment, for at most GOAL_CONVERGENCE_NOTIFY_TIMEOUT seconds (config.env_settings). A
notification is a side effect of an end that is already on disk: whatever goes wrong here (a bad
settings file, a failing or hanging command) is logged and never changes the goal.

"Once per end": each end has a key (goal id, state, stop reason, iterations and triage item), and
an end whose key is already in `events.jsonl` is not announced again, so a retried iteration or a
second look at the same ended goal stays silent, while a goal that is resumed and ends again
(more iterations, or a new triage item) is announced again.
"""

from __future__ import annotations

import json
import os
import tempfile
import traceback
from datetime import datetime
from pathlib import Path

from ..models import Goal, now_iso
from ..storage import config
from ..storage.store import Store
from ..system import mask, process
from ..system.log import log_error

ENDED = ("converged", "escalated", "failed")
_OUTPUT_LOGGED = 2000


def events_path(store: Store) -> Path:
    return store.root / "events.jsonl"


def end_key(goal: Goal) -> str:
    triage_id = goal.escalation.triage_id if goal.escalation else None
    return f"{goal.goal_id}:{goal.state}:{goal.stop_reason}:{goal.spent.iterations}:{triage_id or '-'}"


def event(goal: Goal, now: datetime | None = None) -> dict:
    s = goal.spent
    return mask.data({
        "event": "goal-ended",
        "key": end_key(goal),
        "goalId": goal.goal_id,
        "objective": goal.objective,
        "state": goal.state,
        "stopReason": goal.stop_reason,
        "iterations": s.iterations,
        "spent": {"dollars": round(s.dollars, 6), "makerDollars": round(s.maker_dollars, 6),
                  "oracleDollars": round(s.oracle_dollars, 6), "tokens": s.tokens,
                  "activeSeconds": round(s.active_seconds, 3)},
        "triageId": goal.escalation.triage_id if goal.escalation else None,
        "projectRoot": goal.project_root,
        "source": goal.source,
        "at": now_iso(now),
    })


def goal_ended(store: Store, goal: Goal, now: datetime | None = None) -> dict | None:
    """Record and announce the end of ``goal``; call it after the goal is saved. Returns the event,
    or None when the goal has not ended, its end was already announced, or the event could not be
    recorded. Never raises."""
    if goal.state not in ENDED:
        return None
    try:
        timeout = config.env_settings().notify_timeout  # validated where the command or hook started
        entry = event(goal, now)
        if not _append_once(store, entry):
            return None
        commands = _commands(goal)
    except Exception:  # a notification must never be what breaks a loop or a hook
        log_error("notify", f"goal {goal.goal_id}: could not record its end\n{traceback.format_exc()}")
        return None
    cwd = Path(goal.project_root) if Path(goal.project_root).is_dir() else store.root
    for command in commands:
        try:
            _run(command, entry, cwd, timeout)
        except Exception:  # as above; and one command's trouble must not keep the next from running
            log_error("notify", f"goal {goal.goal_id}: the notify command {command!r} failed\n{traceback.format_exc()}")
    return entry


def _append_once(store: Store, entry: dict) -> bool:
    path = events_path(store)
    with store.lock(path):
        if path.exists():
            with path.open(encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    if entry["key"] in line and _key_of(line) == entry["key"]:
                        return False
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)  # never through a link
        with os.fdopen(fd, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry, ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
    return True


def _key_of(line: str) -> str | None:
    try:
        doc = json.loads(line)
    except ValueError:
        return None
    return doc.get("key") if isinstance(doc, dict) else None


def _commands(goal: Goal) -> list[str]:
    """The home's notify command, then the project's; a bad settings file is logged and skipped."""
    found: list[str] = []
    readers = (("home", config.home_config), ("project", lambda: config.project_config(Path(goal.project_root))))
    for where, read in readers:
        try:
            command = read().notify
        except Exception as exc:
            log_error("notify", f"goal {goal.goal_id}: the {where} notify setting could not be read: {exc}")
            continue
        if command and command not in found:
            found.append(command)
    return found


def _run(command: str, entry: dict, cwd: Path, timeout: float) -> None:
    env = {**os.environ, "GOAL_ID": entry["goalId"], "GOAL_STATE": entry["state"],
           "GOAL_STOP_REASON": entry["stopReason"] or "", "GOAL_OBJECTIVE": entry["objective"]}
    # Output goes to a file, not a pipe: what the command leaves running in the background is left
    # alone, and cannot hang us by keeping a pipe open.
    with tempfile.TemporaryFile() as out:
        try:
            done = process.run(process.shell(command), cwd, out, env=env, timeout=timeout,
                               input=(json.dumps(entry, ensure_ascii=False) + "\n").encode())
        except OSError as exc:
            log_error("notify", f"goal {entry['goalId']}: could not start the notify command {command!r}: {exc}")
            return
        # A timeout ends the whole group: the shell and what it started.
        problem = (f"timed out after {timeout:g}s and was killed" if done.timed_out
                   else f"exited {done.code}" if done.code else None)
        if problem:
            out.seek(0)
            said = out.read()[-_OUTPUT_LOGGED:].decode("utf-8", "replace").strip()
            log_error("notify", f"goal {entry['goalId']} ({entry['state']}): the notify command {command!r} "
                                f"{problem}; fix the `notify` setting (docs/heartbeat.md, Notifications)\n{said}")
