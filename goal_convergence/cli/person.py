"""What only a person may do: create a goal or change one. A maker works with the user's account and a shell,
so it can type `goal run $GOAL_ID --oracle conditions` as well as a person can; a goal whose maker can change
its own judge, conditions or budget proves nothing (issue 24).

So every command is refused from inside a maker (``insiders.inside``: a recorded maker among the process's
ancestors, or the maker's environment variable), except those that only read and `goal blocked`, which only
ever escalates the maker's own goal. The list is of what is allowed: a command added later is refused until
someone decides it only reads. The check wraps each command's callback, so it runs once click has parsed the
command line (``--help`` and ``--version`` answer before it) and whatever front end calls the command.

The plugin's slash commands are a person's: only the user can type them (``disable-model-invocation``), and
their hook runs them in-process under ``by_person``. Claude Code's own process may be a recorded maker, so
the hook's process tree alone would not tell them apart.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Iterator
from typing import Any

import click

from ..errors import MakerRefused

# "goal <this>": commands a maker may run.
ALLOWED = frozenset({"status", "list", "report", "diff", "check", "triage list", "triage show", "blocked"})

_PERSON: contextvars.ContextVar[bool] = contextvars.ContextVar("goal_convergence_person", default=False)


@contextlib.contextmanager
def by_person() -> Iterator[None]:
    """Commands run in the block are a person's (the plugin's slash commands, run by their hook in-process)."""
    token = _PERSON.set(True)
    try:
        yield
    finally:
        _PERSON.reset(token)


def refuse_inside_maker(name: str) -> None:
    """Raise MakerRefused when `goal <name>` changes goals and runs inside a maker."""
    if name in ALLOWED or _PERSON.get():
        return
    from ..system import index, insiders

    goal_id = insiders.inside(index.home())
    if goal_id is None:
        return
    whose = f"the maker of goal {goal_id}" if goal_id != "?" else "a goal's maker"
    raise MakerRefused(
        f"`goal {name}` was refused: it runs inside {whose}, and a maker may not create a goal or change one (its "
        "conditions, judge, budget or state). Only a person may, from their own terminal or with the "
        "/goal-convergence:goal slash command in Claude Code. If the goal cannot be met as written, say so: run "
        '`goal blocked "why"` and the goal goes to a person with your reason.')


def guarded(command: click.Command, parent: str = "") -> click.Command:
    """``command`` (and, for a group, every command under it), each refusing to run inside a maker unless it is
    ALLOWED. Idempotent: a command already guarded is left as it is."""
    name = f"{parent} {command.name}".strip()
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            guarded(sub, name)
        return command
    inner = command.callback
    if inner is None or getattr(inner, "refuses_makers", False):
        return command

    @functools.wraps(inner)
    def callback(*args: Any, **kwargs: Any) -> Any:
        refuse_inside_maker(name)
        return inner(*args, **kwargs)

    callback.refuses_makers = True  # type: ignore[attr-defined]
    command.callback = callback
    return command
