"""The maker's honest way out: it says the goal cannot be met as written, and the goal goes to a person.

Coding agents given a legitimate exit cheat far less than those pushed to make the checks pass at any price
(ImpossibleBench). So a maker may end its goal by saying why it cannot be done, with `goal blocked "why"` (the
one command that changes a goal which a maker may run: it only ever escalates) or with a line ``GOAL BLOCKED:
why`` in its last message (rules/decide.py). Either way the goal escalates as ``unfixable``, its blocker
``needs_user_input``, and the maker's reason is in the escalation and first in the triage item.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from ..errors import InvalidInput
from ..models import Goal
from ..storage.store import Store
from ..system import insiders, mask
from . import lookup, notify, triage

WHY_CHARS = 2000


def which_goal(store: Store, project: Path | str | None = None) -> str:
    """The goal a maker works on: the one its runner recorded (or its environment names), else the project's
    active goal."""
    named = insiders.inside(store.root)
    if named and named != "?":
        return named
    return lookup.resolve(store, None, project, ("active",)).goal_id


def block(store: Store, goal_id: str, why: str, now: datetime | None = None) -> Goal:
    """Escalate the active goal ``goal_id`` because its maker says it cannot be met as written, for ``why``."""
    why = mask.text(" ".join(why.split()))[:WHY_CHARS]
    if not why:
        raise InvalidInput('say why the goal cannot be met as written: goal blocked "the test expects 3 but the '
                           'spec says 4"')
    now = now or datetime.now(UTC)
    said = f"the maker says the goal cannot be met as written: {why}"
    goal = store.update(Goal, goal_id, lambda g: triage.escalate(g, "unfixable", "needs_user_input", said, now),
                        companion=triage.with_item(now, why=said))
    notify.goal_ended(store, goal, now)
    return goal
