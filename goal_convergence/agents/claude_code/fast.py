"""The hooks' fast path: the answer when no goal needs touching, from the standard library alone.

Hooks run at every stop of every session (PreToolUse before every tool call), and nearly always the
answer is "no goal here". This module gives that answer on its own: it imports only the standard
library and index.py (log.py and errors.py only on failure), so a Stop, SessionEnd or PreToolUse
costs a Python start and one stat of the session's binding file, and a SessionStart one read of the
goal index; when the index is stale, reindex.py (standard library too) brings it up to date first.
Anything that touches a goal is the slow path (hooks.py), except PreToolUse's answer for a session
that owns a goal, which pretool.py gives with the standard library too. The plugin's launcher
imports this module straight from the plugin root, with ``python3 -S``, before it looks for the CLI.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...system import index
from ...system.text import json_escaped, money, terminal_safe

EVENTS = ("session-start", "stop", "session-end", "prompt-expansion", "pre-tool-use")
RESUMING = ("resume", "compact")  # SessionStart sources that continue this session's goal
COMMAND = "/goal-convergence:goal"
# Set by the launcher on the `goal hook` it starts once this fast path has found work: one Stop
# runs the fast path once. An environment variable, not an argument, so that an older `goal` on
# PATH still understands the call (it just runs the fast path again).
RAN = "GOAL_CONVERGENCE_FAST_PATH_RAN"


def answer(event: str, data: bytes) -> dict[str, object] | None:
    """The answer when no goal needs touching, or None when the slow path has work to do."""
    if event == "prompt-expansion":
        return None
    try:
        payload = json.loads(data)
        session_id = payload.get("session_id")
    except (ValueError, AttributeError, RecursionError):
        return None  # the slow path validates the input and says what is wrong
    if not isinstance(session_id, str) or not session_id:
        return {}  # no session to bind a goal to: never act (and never hijack another session)
    if event != "session-start":
        # One stat, however many goals there are: the folder of bindings names this session's goal.
        bound_here = index.binding(index.home(), session_id)
        if bound_here is not None:
            return _working(event, payload, session_id) if bound_here else {}
    home = index.home()
    moved: list[tuple[Path, str]] = []
    summaries: list[dict[str, Any]] = []
    if (home / "goals").is_dir() and (summaries := index.fresh(home)) is None:
        # a stale index is brought up to date from the changed files' JSON, broken ones moved aside
        from ...system import reindex

        summaries = reindex.summaries(home, moved)
    found = _answer(event, payload, session_id, home, summaries)
    if not moved:
        return found
    from ...system import quarantine
    from . import naming

    told = quarantine.with_notice(found or {}, moved)  # logged, and told when this answer is the hook's
    return None if found is None else naming.answer_in_session(told)


def _answer(event: str, payload: dict[str, Any], session_id: str, home: Path,
            summaries: list[dict[str, Any]]) -> dict[str, object] | None:
    if event != "session-start" and not index.sessions_dir(home).is_dir():
        index.sync_bindings(home, {s["goalId"]: s for s in summaries})  # a home from 0.1.0: next time, one open
    bound = index.bound_to_session(summaries, session_id)
    if event == "session-start":
        if bound and payload.get("source") in RESUMING:
            return None  # restart the goal's clock
        cwd = payload.get("cwd")  # a cwd that is not text is no folder: the hook's own (Claude Code's project)
        return session_start_answer(summaries, session_id, cwd if isinstance(cwd, str) else None)
    return _working(event, payload, session_id) if bound else {}


def _working(event: str, payload: dict[str, Any], session_id: str) -> dict[str, object] | None:
    """For a session that owns an active goal: the slow path's work, or PreToolUse's answer, which stays
    out of the slow path (it runs before every tool call) and needs only the standard library."""
    if event != "pre-tool-use":
        return None
    from . import pretool

    return pretool.answer(payload, session_id, index.home())


def answer_text(answer: dict[str, Any]) -> str:
    """A hook's answer as the line Claude Code reads: its systemMessage, which Claude Code shows on the user's
    terminal as it is, neutralised (text.terminal_safe), and the JSON escaping what JSON leaves raw."""
    if isinstance(answer.get("systemMessage"), str):
        answer = {**answer, "systemMessage": terminal_safe(answer["systemMessage"])}
    return json_escaped(json.dumps(answer, ensure_ascii=False)) + "\n"


def failure_line(event: str, exc: BaseException) -> str:
    import traceback  # only failures pay for these imports

    from ...errors import GoalConvergenceError, disk_error
    from ...system.log import log_error

    path = log_error(f"hook {event}", "".join(traceback.format_exception(exc)))
    if isinstance(exc, OSError):
        exc = disk_error(exc)  # a full or read-only disk: say which file and what to do, not a traceback's last line
    if isinstance(exc, GoalConvergenceError):
        return f"goal-convergence: {exc}"
    what = f"{type(exc).__name__}: {exc}".strip().rstrip(":").splitlines()[0][:300]
    return f"goal-convergence: the {event} hook failed ({what}); details in {path or 'no log (it could not be written)'}"


def session_start_answer(summaries: list[dict[str, object]], session_id: str, cwd: str | None) -> dict[str, object]:
    """This project's open goals, for the model (additionalContext) and in one line for the user."""
    root = str(index.project_root(cwd))
    found = sorted((s for s in summaries if s.get("projectRoot") == root and s.get("state") in index.OPEN_STATES),
                   key=lambda s: s.get("createdAt", ""), reverse=True)
    if not found:
        return {}
    lines = [f"goal-convergence: open goals in this project ({root}). Do not work on one that is not bound to "
             f"this session unless the user asks."]
    lines += [_describe(s, session_id) for s in found]
    counts: dict[str, int] = {}
    for s in found:
        counts[s["state"]] = counts.get(s["state"], 0) + 1
    tally = ", ".join(f"{n} {state}" for state, n in counts.items())
    mine = next(iter(index.bound_to_session(found, session_id)), None)
    notice = (f"goal-convergence: {mine['goalId']} continues in this session ({_progress(mine)})" if mine else
              f"goal-convergence: {len(found)} open goal{'s' if len(found) > 1 else ''} in this project ({tally}); "
              f"{COMMAND} list")
    return {"systemMessage": notice,
            "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "\n".join(lines)}}


def _progress(s: dict[str, object]) -> str:
    return f"iteration {s.get('iterations', 0)}/{s.get('maxIterations') or '∞'}, {money(s.get('dollars', 0))} spent"


def _describe(s: dict[str, object], session_id: str) -> str:
    gid, state = s["goalId"], s["state"]
    flat = " ".join(s["objective"].split())  # one line, as typed: no Python escaping
    objective = flat if len(flat) <= 500 else flat[:500] + "…"
    if state == "active" and s.get("sessionId") == session_id:
        status, todo = "active, bound to this session", "Its checks run by themselves each time you stop."
    elif state == "active" and not s.get("sessionId"):  # a heartbeat's or a headless run's goal
        status, todo = "active, held by no session", f"To work on it here: {COMMAND} resume {gid}"
    elif state == "active":
        status, todo = "active in another session", f"To carry it on here: {COMMAND} resume {gid}"
    elif state == "paused":
        status, todo = "paused", f"To resume it: {COMMAND} resume {gid}"
    else:
        tri = s.get("triageId")
        status = f"escalated: {s.get('stopReason')}" + (f", triage item {tri}" if tri else "")
        todo = (f"See /goal-convergence:triage show {tri}; " if tri else "") + \
            f"to re-open it with a raised budget: {COMMAND} resume {gid} --max-iterations N"
    hint = f" Last hint: {s['lastHint']}" if s.get("lastHint") else ""
    return f"- {gid} ({status}): “{objective}”; {_progress(s)}.{hint} {todo}"
