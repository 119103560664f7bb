"""`goal wave`: several goals of one project at once, each in its worktree, merged back in order (wave.py)."""

from __future__ import annotations

import json
import os

import click


@click.command("wave")
@click.argument("goal_ids", nargs=-1)
@click.option("--heartbeat", "from_heartbeat", is_flag=True,
              help="The project's open heartbeat goals no session holds (what `goal heartbeat --run` works on).")
@click.option("--parallel", type=click.IntRange(min=1), default=2, show_default=True, help="Goals worked at once.")
@click.option("--project", type=click.Path(file_okay=False), help="Project folder (default: here).")
@click.option("--maker", type=click.Choice(["claude"]), help="The makers: Claude Code in print mode (default).")
@click.option("--maker-cmd", help="The makers: any shell command, run in each worktree (it gets GOAL_HINT, GOAL_ID).")
@click.option("--json", "json_out", is_flag=True, help="Print the table as JSON.")
def wave_cmd(goal_ids: tuple[str, ...], from_heartbeat: bool, parallel: int, project: str | None, maker: str | None,
             maker_cmd: str | None, json_out: bool) -> int:
    """Work several goals of one project at once, PARALLEL at a time, each headless in a git worktree of its own,
    then merge the converged ones back in order. Exits with the worst goal's code (docs/waves.md)."""
    if bool(goal_ids) == from_heartbeat:
        raise click.UsageError("name the goals of the wave, or pass --heartbeat, not both")
    from ...goals import lookup
    from ...loop import wave
    from ...storage.store import Store

    store, root = Store(), lookup.find_project(project or os.getcwd())
    live = (lambda m: click.echo(f"{m.goal.goal_id} ended (exit {m.code})", err=True)) if not json_out else None
    result = wave.run(store, root, list(goal_ids) or None, parallel, maker_cmd, on_end=live)
    click.echo(json.dumps(result.summary(), indent=2)) if json_out else click.echo(result.table())
    return result.exit_code
