"""The `goal` console script, and the one place its front ends meet.

Hooks run on every turn of every session, so `goal hook ...` (Claude Code's) and `goal hook codex ...`
(Codex CLI's) are dispatched before click, pydantic or anything else heavy is imported. Everything else
is the CLI (cli/), with the hidden commands of the other front ends added: the GitHub Action's steps
(`goal action ...`) and the slash command's helper (`goal slash`), which sit above the CLI because they
call its commands and flags."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:3] == ["hook", "gemini"]:  # `goal hook gemini EVENT`: Gemini CLI's hooks
        from .agents.gemini_cli.dispatch import main as gemini_main

        sys.exit(gemini_main(sys.argv[3:]))
    if sys.argv[1:3] == ["hook", "codex"]:  # `goal hook codex EVENT`: Codex CLI's hooks
        from .agents.codex.dispatch import main as codex_main

        sys.exit(codex_main(sys.argv[3:]))
    if sys.argv[1:2] == ["hook"]:  # `goal hook EVENT`: Claude Code's
        from .agents.claude_code.dispatch import main as hook_main

        sys.exit(hook_main(sys.argv[2:]))
    sys.exit(run(sys.argv[1:]))


def run(argv: list[str] | None = None) -> int:
    """`goal ARGS`, with the CLI's exit codes (cli/app.py)."""
    from .actions.commands import action_group
    from .agents.claude_code.command import slash_cmd
    from .cli import app, person

    for command in (action_group, slash_cmd):  # refused inside a maker, as every command that changes goals is
        app.cli.add_command(person.guarded(command))
    return app.main(argv)
