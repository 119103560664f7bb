"""`goal abandon`: a goal ends as failed, stop reason cancelled; its checkpoints go unless kept."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from .. import output

if TYPE_CHECKING:
    from ...models import Goal
    from ...storage.store import Store


def abandon(store: Store, goal_id: str | None, *, session_id: str | None = None, project: Path | None = None,
            keep_checkpoints: bool = False) -> Goal:
    """Abandon the goal named, else this session's active or paused goal, else the project's."""
    from ...goals import lookup, moves

    goal = lookup.resolve(store, goal_id, project, ("active", "paused"), session_id=session_id)
    return moves.move(store, goal.goal_id, "abandon", keep_checkpoints=keep_checkpoints)


@click.command("abandon")
@click.argument("goal_id", required=False)
@click.option("--keep-checkpoints", is_flag=True, help="Keep its checkpoint refs (by default they are removed).")
@output.json_option
def abandon_cmd(goal_id: str | None, keep_checkpoints: bool, json_out: bool) -> None:
    """Abandon a goal: it ends as failed (stop reason: cancelled)."""
    goal = abandon(output.store(), goal_id, keep_checkpoints=keep_checkpoints)
    output.echo_goal(goal) if json_out else click.echo(f"abandoned {goal.goal_id} (failed, cancelled)")
