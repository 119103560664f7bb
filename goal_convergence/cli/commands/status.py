"""`goal status`: one goal, as the CLI and the slash command show it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from .. import output

if TYPE_CHECKING:
    from ...goals.lookup import Found
    from ...storage.store import Store


def find(store: Store, goal_id: str | None, *, session_id: str | None = None, project: Path | None = None) -> Found:
    """The goal `status` shows: the one named, else the open one, else the most recent (lookup.shown)."""
    from ...goals import lookup

    return lookup.shown(store, goal_id, project, session_id=session_id)


@click.command("status")
@click.argument("goal_id", required=False)
@output.json_option
def status_cmd(goal_id: str | None, json_out: bool) -> None:
    """Show a goal (default: the open goal of this project, else its most recent one)."""
    from ...report import render

    found = find(output.store(), goal_id)
    output.echo_note(found.note, json_out)
    output.echo_goal(found.goal) if json_out else click.echo(render.status(found.goal))
