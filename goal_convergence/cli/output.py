"""What every command prints through: the store it reports quarantined files of, JSON, long listings and
the live progress of conditions on a terminal.

Whatever a command prints may hold text that came from outside (an objective, a hint, a verdict's reasons, a
condition's output, a file name), so the streams themselves neutralise terminal controls (``safe_streams``,
around every command: text.terminal_safe) and JSON is written with those characters escaped. The one
writer of control sequences of its own, the live progress, writes to the terminal itself."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..system.text import json_escaped, terminal_safe

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
    click.echo(json_escaped(json.dumps(data, indent=2, ensure_ascii=False)))


# On a terminal, a line longer than this is cut: one 3 MB hint would otherwise scroll a person's screen
# away. Pipes and files (scripts, hooks, --json read by a program) get every character.
TERMINAL_LINE = 10_000


class SafeStream:
    """A text stream that writes what it is given through ``terminal_safe`` (on a terminal, its lines cut at
    TERMINAL_LINE); the rest is the stream's own. It has no ``buffer``, so that nothing (click looks for
    one) writes around it."""

    def __init__(self, stream: object) -> None:
        self.raw = stream
        try:
            self._person = bool(stream.isatty())  # type: ignore[attr-defined]
        except (AttributeError, ValueError):
            self._person = False

    def write(self, text: str) -> int:
        safe = terminal_safe(text)
        if self._person and len(safe) > TERMINAL_LINE:
            safe = "\n".join(line if len(line) <= TERMINAL_LINE else
                             f"{line[:TERMINAL_LINE]}… ({len(line) - TERMINAL_LINE} more characters; --json prints all)"
                             for line in safe.split("\n"))
        self.raw.write(safe)  # type: ignore[attr-defined]
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> object:
        if name == "buffer":
            raise AttributeError(name)
        return getattr(self.raw, name)


@contextlib.contextmanager
def safe_streams() -> Iterator[None]:
    """stdout and stderr as SafeStreams while a command runs (cli.main)."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = SafeStream(saved[0]), SafeStream(saved[1])  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def _terminal() -> object:
    """stderr itself, for the live progress's own control sequences (it neutralises what it draws)."""
    return getattr(sys.stderr, "raw", sys.stderr)


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

    return None if json_out or not sys.stderr.isatty() else LiveProgress(_terminal())  # type: ignore[arg-type]


json_option = click.option("--json", "json_out", is_flag=True, help="Print the goal document.")
