"""`goal slash`: what /goal-convergence:goal runs, its raw argument text on stdin (no shell parse).
Hidden from `goal --help`: it is for the plugin's command file, not for typing."""

from __future__ import annotations

import os

import click


@click.command("slash", hidden=True)
@click.option("--session", "session_id", help="The Claude Code session a new or resumed goal is bound to.")
def slash_cmd(session_id: str | None) -> None:
    """Run /goal-convergence:goal with its raw argument text read from stdin (no shell parse).

    Prints text for the model and exits 0 even on bad arguments: Claude Code aborts a slash command
    whose helper fails, and the error text is what the user needs to see."""
    from .slash import run_command

    reply = run_command("goal", click.get_text_stream("stdin").read(), session_id=session_id, cwd=os.getcwd())
    click.echo(reply.text)
