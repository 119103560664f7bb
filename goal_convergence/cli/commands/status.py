"""`goal status`: one goal, as the CLI and the slash command show it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from .. import output

if TYPE_CHECKING:
    from ...models import Goal
    from ...storage.store import Store


def find(store: Store, goal_id: str | None, *, session_id: str | None = None, project: Path | None = None) -> Goal:
    """The goal `status` shows: the one named, else this session's open goal, else the project's."""
    from ...goals import lookup
    from ...system.index import OPEN_STATES

    return lookup.resolve(store, goal_id, project, OPEN_STATES, session_id=session_id)


@click.command("status")
@click.argument("goal_id", required=False)
@output.json_option
def status_cmd(goal_id: str | None, json_out: bool) -> None:
    """Show a goal (default: the open goal of this project)."""
    from ...report import render

    goal = find(output.store(), goal_id)
    output.echo_goal(goal) if json_out else click.echo(render.status(goal))
