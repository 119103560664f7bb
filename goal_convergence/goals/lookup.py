"""Finding goals: the project a folder belongs to, the goal a command means, a session's binding."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import AmbiguousGoal, GoalNotFound, InvalidInput
from ..models import Goal
from ..storage.store import Store
from ..system import index
from ..system.text import state_words


def find_project(path: Path | str | None) -> Path:
    """The project root of the folder the user named (default: cwd), which must exist."""
    folder = Path(path or os.getcwd()).expanduser().resolve()
    if not folder.is_dir():
        raise InvalidInput(f"project folder {folder} does not exist; pass an existing folder with --project")
    return index.project_root(folder)


def refuse_second_goal_in_session(store: Store, session_id: str, except_id: str | None = None) -> None:
    for s in index.bound_to_session(store.summaries(), session_id):
        if s["goalId"] != except_id:
            raise InvalidInput(
                f"this session already works on {s['goalId']} ({s['objective']!r}); "
                f"pause or abandon it first, or start the new goal in another session"
            )


def resolve(store: Store, goal_id: str | None, project: Path | str | None = None,
            states: tuple[str, ...] = ("active", "paused"), *, session_id: str | None = None) -> Goal:
    """The goal a command means: the one named, else the one bound to ``session_id`` in one of ``states``,
    else the one goal of the project in one of ``states``. Every front end finds its goal here."""
    if goal_id:
        return store.load(Goal, goal_id)
    bound = index.bound_to_session(store.summaries(), session_id, states) if session_id else []
    if bound:
        return store.load(Goal, bound[0]["goalId"])
    root = str(find_project(project))
    found = [s for s in store.summaries() if s["projectRoot"] == root and s["state"] in states]
    if not found:
        raise GoalNotFound(f"no {' or '.join(states)} goal in {root}; start one with `goal new OBJECTIVE` "
                           f"or see `goal list --all`")
    if len(found) > 1:
        lines = "\n".join(f"  {s['goalId']}  {s['state']:<9}  {s['objective']}" for s in found)
        raise AmbiguousGoal(f"{len(found)} goals are open in {root}; name one:\n{lines}")
    return store.load(Goal, found[0]["goalId"])


@dataclass(frozen=True)
class Found:
    """The goal a read command shows, and, when it is not an open goal, the sentence that says which it is."""

    goal: Goal
    note: str | None = None


def shown(store: Store, goal_id: str | None, project: Path | str | None = None, *,
          session_id: str | None = None) -> Found:
    """The goal every read command (status, report, check, the slash command's) means: the one named; else
    the open goal of this session, else of the project; else, with none open, the most recent goal of this
    session, else of the project, with a note saying so. A goal that ended is still worth a look: `goal status`
    right after a goal converges shows it."""
    try:
        return Found(resolve(store, goal_id, project, index.OPEN_STATES, session_id=session_id))
    except GoalNotFound:
        if goal_id:
            raise
    root = str(find_project(project))
    summaries = store.summaries()
    mine = index.bound_to_session(summaries, session_id, index.STATES) or [
        s for s in summaries if s["projectRoot"] == root]
    if not mine:
        raise GoalNotFound(f"no goal in {root} yet; start one with `goal new OBJECTIVE` (or `goal demo` to watch "
                           f"one), or name one from `goal list --all`")
    newest = max(mine, key=lambda s: s["createdAt"])
    state = state_words(newest["state"], newest.get("stopReason"))
    return Found(store.load(Goal, newest["goalId"]),
                 f"no open goal in {root}; showing the most recent one, {newest['goalId']}, {state} "
                 f"(`goal list --all` lists every goal)")
