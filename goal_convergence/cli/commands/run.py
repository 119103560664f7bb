"""`goal run`: a goal worked headless until it ends, with `claude -p` or any command as the maker."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .. import output
from ..options import attempts_option, budget_options, given, goal_options, spec_from


@click.command("run")
@click.argument("target", required=False)
@goal_options
@budget_options(defaults=True)
@click.option("--maker", type=click.Choice(["claude", "gemini"]),
              help="The maker: Claude Code in print mode (default), or Gemini CLI in headless mode.")
@click.option("--maker-cmd", help="The maker: any shell command (it gets GOAL_HINT, GOAL_ID, GOAL_TASKS).")
@attempts_option
@click.option("--branch", help="Leave the converged work on a new branch of this name, not in your files.")
@click.option("--json", "json_out", is_flag=True, help="Print the ledger {met, stop, turns, totalCostUsd, evidence}.")
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path), hidden=True,
              help="A wave's worktree to work in (wave.py); the goal file keeps naming the project.")
def run_cmd(target: str | None, maker: str | None, maker_cmd: str | None, branch: str | None, json_out: bool,
            workdir: Path | None, **options) -> int:
    """Run a goal headless until it ends: TARGET is a goal id, or an OBJECTIVE for a new goal
    (with the condition and budget flags of `goal new`). Exits with the stop reason's code."""
    from ...loop import makers, runner
    from ...report import render

    store = output.store()
    goal_id, settings = runner.target_goal(store, target, lambda: spec_from(target or "", options),
                                           output.live_progress(json_out), given=given(options))
    chosen = makers.CommandMaker(maker_cmd) if maker_cmd else makers.named(maker, options.get("maker_model"))
    live = sys.stderr.isatty() and not json_out
    if workdir:
        from ...loop.wave import interrupt_on_term

        interrupt_on_term()
    result = runner.run_goal(store, goal_id, chosen, attempts=options.get("attempts"), branch=branch, workdir=workdir,
                             settings=settings,
                             on_iteration=(lambda o: click.echo(render.iteration_line(o), err=True)) if live else None)
    output.echo_json(result.ledger()) if json_out else click.echo(
        render.run_summary(result.goal, result.stop, result.note))
    return result.exit_code
