"""The README's flag reference names every flag a user can give: each option of each `goal` command
(walked from the click commands themselves) and of the slash commands' parsers."""

from __future__ import annotations

import re
from pathlib import Path

import click

from goal_convergence.agents.claude_code import slash
from goal_convergence.cli.app import cli

README = Path(__file__).resolve().parent.parent / "README.md"


def commands(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    found = []
    for name, command in group.commands.items():
        found += commands(command, (*path, name)) if isinstance(command, click.Group) else [((*path, name), command)]
    return found


def flags(command: click.Command) -> list[str]:
    return [o for p in command.params if isinstance(p, click.Option) for o in p.opts + p.secondary_opts
            if o.startswith("--") and o != "--help"]


def _named(flag: str, text: str) -> bool:
    return re.search("`" + re.escape(flag) + r"[ `\\]", text) is not None


def undocumented(readme: str) -> list[str]:
    """Each flag the Flag reference section does not name; a command's own flag (not a goal or budget
    flag, shared by several commands) must be in a table row whose first cell names the command."""
    section = readme.split("\n## Flag reference\n", 1)[1].split("\n## ", 1)[0]
    rows = [[cell.strip() for cell in line.split(" | ")] for line in section.splitlines() if line.startswith("| `")]
    shared = set(flags(slash.NEW)) | set(flags(slash.RESUME))
    missing = [f"goal {flag}" for flag in flags(cli) if not _named(flag, section)]
    for path, command in commands(cli):
        name = " ".join(path)
        for flag in flags(command):
            ok = _named(flag, section) if flag in shared else any(
                name in row[0] and any(_named(flag, cell) for cell in row[1:]) for row in rows)
            if not ok:
                missing.append(f"goal {name} {flag}")
    return missing


def test_the_readme_names_every_flag_of_every_command():
    assert undocumented(README.read_text(encoding="utf-8")) == []


def test_a_flag_left_out_of_the_readme_is_caught():
    readme = README.read_text(encoding="utf-8")
    without = "\n".join(line for line in readme.splitlines() if "`--stuck-after" not in line and "`--keep`" not in line)
    assert sorted(undocumented(without)) == ["goal demo --keep", "goal new --stuck-after", "goal run --stuck-after"]


def test_the_first_command_is_the_demo():
    first = re.search(r"```sh\n(.+?)\n```", README.read_text(encoding="utf-8")).group(1)
    assert first == "pip install . && goal demo"
