"""`goal heartbeat`: the project's checks run; each new failure becomes a goal or a triage item (loop/heartbeat.py)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from .. import output


@click.command("heartbeat")
@click.option("--project", type=click.Path(file_okay=False), help="Project folder (default: here).")
@click.option("--mode", type=click.Choice(["goal", "triage"]),
              help="What a new failure becomes (default: the config's mode, else goal).")
@click.option("--run", "run_goals", is_flag=True,
              help="Then run the project's open heartbeat goals no session holds, headless, one after another "
                   "(or --parallel K at a time).")
@click.option("--parallel", type=click.IntRange(min=1), default=1, show_default=True,
              help="With --run: that many goals at once, as a wave (`goal wave`: worktrees, merged back in order).")
@click.option("--oracle", type=click.Choice(["auto", "anthropic", "claude-cli", "gemini-cli", "command", "conditions"]),
              help="The heartbeat goals' oracle, over the settings' `oracle`; `conditions` means no model at all.")
@click.option("--maker", type=click.Choice(["claude"]), help="With --run: Claude Code in print mode (default).")
@click.option("--maker-cmd", help="With --run: any shell command as the maker (it gets GOAL_HINT, GOAL_ID).")
@click.option("--json", "json_out", is_flag=True, help="Always print a JSON summary.")
def heartbeat_cmd(project: str | None, mode: str | None, run_goals: bool, parallel: int, oracle: str | None,
                  maker: str | None, maker_cmd: str | None, json_out: bool) -> int:
    """Run the project's checks; each new failure becomes a goal (or a triage item), deduplicated and
    rate-limited. Prints nothing unless something new was made, skipped or run (cron-friendly)."""
    from ...loop import heartbeat, makers

    chosen = makers.CommandMaker(maker_cmd) if maker_cmd else makers.ClaudeMaker() if maker else None
    report = heartbeat.beat(output.store(), Path(project or os.getcwd()), mode=mode, run=run_goals, maker=chosen,
                            oracle=oracle, parallel=parallel)
    if json_out:
        output.echo_json(report.summary())
    elif report.changed:
        click.echo(report.text())
    return report.exit_code
