"""`goal diff`: what an iteration changed, from the goal's checkpoints (rewind.py)."""

from __future__ import annotations

import click


@click.command("diff")
@click.argument("goal_id")
@click.argument("first", type=click.IntRange(min=0), required=False)
@click.argument("second", type=click.IntRange(min=0), required=False)
@click.option("--stat", is_flag=True, help="Only the files changed and how much (git diff --stat).")
def diff_cmd(goal_id: str, first: int | None, second: int | None, stat: bool) -> None:
    """What iteration N changed (default: the latest), or what changed from iteration N to M.
    Iteration 0 is the commit the goal began on."""
    from ...loop import rewind  # git and the models: only when the command runs
    from ...storage.store import Store

    click.echo(rewind.diff(Store(), goal_id, first, second, stat=stat), nl=False)
