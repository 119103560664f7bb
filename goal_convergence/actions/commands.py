"""`goal action ...`: the steps of the GitHub Action (action.yml) and of the reusable workflow. Hidden from
`goal --help`: they read their inputs from the step's environment, as a runner sets it."""

from __future__ import annotations

from pathlib import Path

import click


@click.group("action", hidden=True)
def action_group() -> None:
    """The GitHub Action's steps (action.yml): inputs in GOAL_INPUT_* variables, answers in GITHUB_OUTPUT."""


@action_group.command("run")
def run_cmd() -> int:
    """Create the goal the inputs describe, run it to its end, write outputs, job summary and artifact files.
    Exits 0 whenever the goal ran to an end; the action's last step fails the job unless it was met."""
    from .run import run_step

    run_step(echo=click.echo)
    return 0


@action_group.command("pull-request")
def pull_request_cmd() -> None:
    """Push the converged goal's changes to a new branch and open a pull request (input pull-request)."""
    from .pullrequest import pull_request_step

    pull_request_step(echo=click.echo)


@action_group.command("plan")
def plan_cmd() -> None:
    """The matrix of goals: input goals (a JSON list), or what a heartbeat here finds failing."""
    from .fanout import plan_step

    plan_step(echo=click.echo)


@action_group.command("summary")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
def summary_cmd(folder: Path) -> None:
    """Fan in: the ledgers of every run under FOLDER (the downloaded artifacts) as one job summary. A missing
    FOLDER is no goal at all: download-artifact makes none when no goal job ran."""
    from .ledger import fan_in_step

    for g in fan_in_step(folder):
        click.echo(f"{g['goalId']}: {g['stop']} after {g.get('turns', 0)} iteration(s)")
