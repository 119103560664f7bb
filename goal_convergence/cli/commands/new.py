"""`goal new`: create a goal; with no condition flags its conditions are inferred from the objective."""

from __future__ import annotations

import click

from .. import output
from ..options import attempts_option, budget_options, goal_options, spec_from


@click.command("new")
@click.argument("objective")
@goal_options
@attempts_option
@budget_options(defaults=True)
@output.json_option
def new_cmd(objective: str, json_out: bool, **options) -> None:
    """Create a goal. With no condition flags, conditions are inferred from OBJECTIVE and the project."""
    from ...goals import creation
    from ...report import render

    goal = creation.new_goal(output.store(), spec_from(objective, options), on_progress=output.live_progress(json_out))
    if json_out:
        for note in render.creation_notes(goal):  # beside the JSON, not in it
            click.echo(note, err=True)
    output.echo_goal(goal) if json_out else click.echo(render.created(goal))
