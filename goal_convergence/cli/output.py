"""What every command prints through: the store it reports quarantined files of, JSON, long listings and
the live progress of conditions on a terminal."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from ..models import Goal
    from ..report.render import LiveProgress
    from ..storage.store import Store


def store() -> Store:
    from ..storage.store import Store

    opened = Store()
    # Whatever the command had to quarantine on the way is reported when it ends, whatever it did.
    click.get_current_context().call_on_close(lambda: report_quarantine(opened.quarantined))
    return opened


def echo_json(data: object) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def echo_goal(goal: Goal) -> None:
    """A goal document, as every command's --json prints it (models.shown: the hidden expectation withheld)."""
    from ..models.goal import shown

    echo_json(shown(goal))


def echo_note(note: str | None, json_out: bool) -> None:
    """Which goal a read command shows when it is not an open one: above the text, or on stderr beside JSON."""
    if note:
        click.echo(f"({note})", err=json_out)


def echo_lines(lines: Iterable[str], batch: int = 256) -> None:
    """Lines written as they are made, never held whole (a few hundred at a time: click flushes each echo)."""
    held: list[str] = []
    for line in lines:
        held.append(line)
        if len(held) == batch:
            click.echo("\n".join(held))
            held.clear()
    if held:
        click.echo("\n".join(held))


def report_quarantine(moved: list[tuple[Path, str]]) -> None:
    """Report each quarantined file once, however often this is called."""
    while moved:
        path, reason = moved.pop(0)
        click.echo(f"warning: quarantined {path}: {reason}", err=True)


def listed(table: str, root: Path) -> str:
    """A listing, then the quarantined files until they are dismissed (quarantine.py)."""
    from ..system import quarantine

    return "\n\n".join(filter(None, [table, quarantine.notice(root)]))


def live_progress(json_out: bool) -> LiveProgress | None:
    """Conditions running, drawn live on a terminal (never into --json output or a pipe)."""
    from ..report.render import LiveProgress

    return None if json_out or not sys.stderr.isatty() else LiveProgress()


json_option = click.option("--json", "json_out", is_flag=True, help="Print the goal document.")
