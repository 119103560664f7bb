"""`goal run`: a goal worked headless until it ends, with `claude -p`, `codex exec` or any command as the maker."""

from __future__ import annotations

from pathlib import Path

import click

from .. import output
from ..options import attempts_option, budget_options, given, goal_options, spec_from


@click.command("run")
@click.argument("target", required=False)
@goal_options
@budget_options(defaults=True)
@click.option("--maker", type=click.Choice(["claude", "codex", "gemini"]),
              help="The maker: Claude Code in print mode (default), Codex CLI (codex exec) or Gemini CLI headless.")
@click.option("--maker-cmd", help="The maker: any shell command (it gets GOAL_HINT, GOAL_ID, GOAL_TASKS).")
@attempts_option
@click.option("--branch", help="Leave the converged work on a new branch of this name, not in your files.")
@click.option("--json", "json_out", is_flag=True, help="Print the ledger {met, stop, turns, totalCostUsd, evidence}.")
@click.option("--quiet", "-q", is_flag=True, help="Print only the stop and its cost at the end (for scripts).")
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path), hidden=True,
              help="A wave's worktree to work in (wave.py); the goal file keeps naming the project.")
def run_cmd(target: str | None, maker: str | None, maker_cmd: str | None, branch: str | None, json_out: bool,
            quiet: bool, workdir: Path | None, **options) -> int:
    """Run a goal headless until it ends: TARGET is a goal id, or an OBJECTIVE for a new goal
    (with the condition and budget flags of `goal new`). Prints the goal, its checks and judge, then each
    iteration, then the ledger and what to run next. Exits with the stop reason's code."""
    from ...loop import makers, runner
    from ...report import render, story

    store, told = output.store(), not (json_out or quiet)  # the story, on a terminal and in a pipe alike
    goal_id, settings = runner.target_goal(store, target, lambda: spec_from(target or "", options),
                                           output.live_progress(json_out or quiet), given=given(options))
    chosen = makers.choose(maker, maker_cmd, options.get("maker_model"))
    if workdir:
        from ...loop.wave import interrupt_on_term

        interrupt_on_term()
    result = runner.run_goal(store, goal_id, chosen, attempts=options.get("attempts"), branch=branch, workdir=workdir,
                             settings=settings, on_progress=output.live_progress(json_out or quiet),
                             on_start=(lambda g: click.echo("\n".join(story.opening(g)) + "\n")) if told else None,
                             on_iteration=(lambda o: click.echo(story.iteration(o))) if told else None)
    output.echo_json(result.ledger()) if json_out else click.echo(
        "\n" + "\n".join(story.ending(result)) if told else render.run_summary(result.goal, result.stop, result.note))
    return result.exit_code
