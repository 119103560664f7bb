"""`goal resume`: carry on with a paused, escalated or detached goal, optionally with a raised budget."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from .. import output
from ..options import budget_options, session_option

if TYPE_CHECKING:
    from ...models import Goal
    from ...storage.store import Store


def resume(store: Store, goal_id: str | None, *, session_id: str | None = None, project: Path | None = None,
           limits: dict | None = None, agent: str = "claude-code") -> Goal:
    """Resume the goal named, else this session's, else the project's, bound to ``session_id`` (a session of
    ``agent``) when given; the budget limits given (None: unchanged) are raised first."""
    from ...goals import lookup, moves

    target = lookup.resolve(store, goal_id, project, ("paused", "active", "escalated"), session_id=session_id)
    raised = {k: v for k, v in (limits or {}).items() if v is not None}
    return moves.resume(store, target.goal_id, session_id=session_id, raise_budget=raised, agent=agent)


@click.command("resume")
@click.argument("goal_id", required=False)
@session_option
@budget_options(defaults=False)
@output.json_option
def resume_cmd(goal_id: str | None, session_id: str | None, json_out: bool, **limits) -> None:
    """Carry on with a paused, escalated or detached goal, optionally with a raised budget."""
    from ...report import render

    goal = resume(output.store(), goal_id, session_id=session_id, limits=limits)
    output.echo_goal(goal) if json_out else click.echo(f"resumed {goal.goal_id}\n{render.status(goal)}")
