"""`goal blocked "why"`: the maker's honest way out, the one goal-changing command a maker may run."""

from __future__ import annotations

import click

from .. import output


@click.command("blocked")
@click.argument("why", nargs=-1, required=True)
@output.json_option
def blocked_cmd(why: tuple[str, ...], json_out: bool) -> None:
    """Say the goal cannot be met as written, and why: it escalates to a person (stop reason unfixable),
    with WHY in its triage item. Allowed from inside a maker, whose goal it ends; else this project's
    active goal."""
    from ...goals import blocked

    store = output.store()
    goal = blocked.block(store, blocked.which_goal(store), " ".join(why))
    output.echo_goal(goal) if json_out else click.echo(
        f"escalated {goal.goal_id} (unfixable): a person will see your reason in `goal triage show "
        f"{goal.escalation.triage_id if goal.escalation else ''}`; stop working on it now")
