"""`goal pause`: the loop stops at the next stop, and paused time is not charged."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from .. import output

if TYPE_CHECKING:
    from ...models import Goal
    from ...storage.store import Store


def pause(store: Store, goal_id: str | None, *, session_id: str | None = None, project: Path | None = None) -> Goal:
    """Pause the goal named, else this session's active goal, else the project's."""
    from ...goals import lookup, moves

    return moves.move(store, lookup.resolve(store, goal_id, project, ("active",), session_id=session_id).goal_id,
                      "pause")


@click.command("pause")
@click.argument("goal_id", required=False)
@output.json_option
def pause_cmd(goal_id: str | None, json_out: bool) -> None:
    """Pause a goal: the loop stops at the next stop and paused time is not charged."""
    goal = pause(output.store(), goal_id)
    output.echo_goal(goal) if json_out else click.echo(
        f"paused {goal.goal_id}; `goal resume {goal.goal_id}` carries on")
