"""`goal rewind`: the project's files back to an iteration's checkpoint (rewind.py)."""

from __future__ import annotations

import click


@click.command("rewind")
@click.argument("goal_id")
@click.argument("to", metavar="N", required=False)
@click.option("--best", is_flag=True, help="The iteration with the most conditions passing (of equals, the latest).")
@click.option("--force", is_flag=True, help="Rewind although the files hold changes no checkpoint or commit holds "
                                            "(they are still kept as a rewind checkpoint).")
def rewind_cmd(goal_id: str, to: str | None, best: bool, force: bool) -> None:
    """Bring the project's files back to iteration N's checkpoint (or rewind-K, the tree before an
    earlier rewind). The tree as it is is kept first, and the command to undo is printed."""
    if best == (to is not None):
        raise click.UsageError("give an iteration N or --best, not both")
    from ...loop import rewind  # git and the models: only when the command runs
    from ...storage.store import Store

    click.echo(rewind.rewind(Store(), goal_id, to, best=best, force=force).text())
