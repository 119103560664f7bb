"""`goal triage ...`: the inbox of goals that need a person (goals/triage.py)."""

from __future__ import annotations

import click

from .. import output
from ..options import budget_options


@click.group("triage")
def triage_group() -> None:
    """The inbox of goals that need a person: escalated goals and heartbeat findings."""


@triage_group.command("list")
@click.option("--all", "show_all", is_flag=True, help="Include acted and dismissed items.")
@click.option("--json", "json_out", is_flag=True, help="Print JSON.")
def triage_list_cmd(show_all: bool, json_out: bool) -> None:
    """List triage items, newest first."""
    from ...goals import triage
    from ...report import render

    store = output.store()
    items = triage.list_items(store, show_all)
    output.echo_json([i.dump() for i in items]) if json_out else click.echo(
        output.listed(render.triage_table(items), store.root))


@triage_group.command("show")
@click.argument("triage_id")
@click.option("--json", "json_out", is_flag=True, help="Print the item document.")
def triage_show_cmd(triage_id: str, json_out: bool) -> None:
    """Show one triage item."""
    from ...goals import triage
    from ...report import render

    item = triage.show(output.store(), triage_id)
    output.echo_json(item.dump()) if json_out else click.echo(render.triage_item(item))


@triage_group.command("act")
@click.argument("triage_id")
@click.argument("action", type=click.Choice(["goal", "accept"]), default="goal", metavar="[ACTION]")
@budget_options(defaults=False)
@click.option("--json", "json_out", is_flag=True, help="Print the goal document.")
def triage_act_cmd(triage_id: str, action: str, json_out: bool, **limits) -> None:
    """Act on an item. ACTION is `goal` (the default): re-open the item's goal (budget flags set its new
    limits), or make a goal from a heartbeat finding; or `accept`: for a goal flagged by the tripwires, accept
    its green run as done, once you have read the findings."""
    from ...goals import triage
    from ...report import render

    store = output.store()
    goal = triage.accept(store, triage_id) if action == "accept" else triage.act(
        store, triage_id, {k: v for k, v in limits.items() if v is not None})
    output.echo_goal(goal) if json_out else click.echo(
        f"{triage_id} acted on: {goal.goal_id} is {goal.state}\n{render.status(goal)}")


@triage_group.command("dismiss")
@click.argument("triage_id")
@click.option("--keep-checkpoints", is_flag=True, help="Keep its goal's checkpoint refs (by default they are removed).")
def triage_dismiss_cmd(triage_id: str, keep_checkpoints: bool) -> None:
    """Dismiss an item (nothing more will be done about it), or a quarantined file that the lists show."""
    from ...goals import triage
    from ...system import quarantine

    store = output.store()
    if quarantine.is_entry(store.root, triage_id):
        quarantine.dismiss(store.root, triage_id)
    else:
        triage.dismiss(store, triage_id, keep_checkpoints=keep_checkpoints)
    click.echo(f"dismissed {triage_id}")
