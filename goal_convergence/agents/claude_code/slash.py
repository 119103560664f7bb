"""The plugin's slash commands: their argument grammar, and the text each one hands the model.

``/goal-convergence:goal`` takes its arguments as raw text, never through a shell parse (an
objective like "don't break the API" or one holding ``$(...)`` must be stored as typed and run
nothing):

- a first word ``pause``, ``resume``, ``status``, ``list``, ``abandon``, ``check``, ``diff``, ``rewind``,
  ``report`` or ``help`` names a subcommand, and what follows is its goal id and flags;
- anything else is a new goal: the objective is the free text up to the first ``--flag``, and the
  flags are `goal new`'s goal and budget flags (options.py; their values may be quoted; only this
  part is split into words).

A goal started or resumed here is bound to the calling session. Whatever goes wrong becomes text
that says so (``Reply``), because Claude Code aborts a slash command whose helper fails.
``/goal-convergence:triage`` and ``/goal-convergence:heartbeat`` pass their words to the CLI.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import click

from ...cli import output
from ...cli.commands import abandon, check, pause, report, resume, status
from ...cli.options import budget_options, goal_options, report_options, session_option, spec_from
from ...errors import GoalConvergenceError, InvalidInput
from ...goals import creation, listing, lookup
from ...models import GOAL_ID_RE, Goal
from ...report import judge, render, story
from ...storage.store import Store
from ...system.text import plural
from .fast import COMMAND

_FIRST_FLAG = re.compile(r"(?:^|\s)--[A-Za-z]")
WORK_ON_IT = ("Work on the objective now. When you believe it is done, simply stop (end your turn): the checks "
              "and the oracle then run on their own. If they find it is not done, their findings and a hint come "
              "back to you as Stop hook feedback; carry on from there. Do not weaken or delete tests or checks, "
              f"and do not run {COMMAND} again to report progress.")


@dataclass
class Reply:
    text: str  # for the model
    notice: str | None = None  # one line for the user


@dataclass
class _Call:
    store: Store
    session_id: str | None
    cwd: Path
    agent: str = "claude-code"
    sub: str = ""
    args: list[str] = field(default_factory=list)
    agent: str = "claude-code"  # the coding agent whose session this is (Goal.agent)


def run_command(name: str, raw: str, *, session_id: str | None, cwd: str | None, store: Store | None = None,
                agent: str = "claude-code") -> Reply:
    """Run the plugin command ``name`` (goal, triage, heartbeat) with its raw argument text; a goal it starts or
    resumes is bound to ``session_id``, a session of ``agent``."""
    folder = Path(cwd) if cwd else Path.cwd()
    try:
        if name == "goal":
            return _goal_command(raw, _Call(store or Store(), session_id, folder, agent))
        if name in ("triage", "heartbeat"):
            return _pass_through(name, _words(raw) or (["list"] if name == "triage" else []), folder)
        raise InvalidInput(f"goal-convergence has no command {name!r}; see {COMMAND} help")
    except (GoalConvergenceError, click.ClickException, ValueError) as exc:  # ValueError: pydantic's, on a bad value
        message = exc.format_message() if isinstance(exc, click.ClickException) else str(exc)
        return Reply(f"goal-convergence could not do that: {message}\n"
                     f"Tell the user this, and do nothing else about it. ({COMMAND} help lists the forms.)",
                     f"goal-convergence: {message.splitlines()[0]}")


def _words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise InvalidInput(f"the arguments {text!r} cannot be split into words ({exc}); close the quote") from None


def _goal_command(raw: str, call: _Call) -> Reply:
    text = raw.strip()
    first, _, rest = re.fullmatch(r"(\S*)(\s*)(.*)", text, re.S).groups()  # type: ignore[union-attr]
    call.sub = first.lower() if text else "help"
    handler = SUBCOMMANDS.get(call.sub)
    if handler is None:
        return _new(text, call)
    call.args = _words(rest)
    return handler(call)


def _new(text: str, call: _Call) -> Reply:
    cut = _FIRST_FLAG.search(text)
    objective = (text[:cut.start()] if cut else text).strip()
    flags = _words(text[cut.start():]) if cut else []
    params = _parse(NEW, [*flags, "--", objective])
    del params["objective"]
    params.update(session_id=call.session_id, agent=call.agent, project=params.get("project") or str(call.cwd))
    goal = creation.new_goal(call.store, spec_from(objective, params))
    return Reply(f"goal-convergence started goal {goal.goal_id}, bound to this session.\n\n{_brief(goal)}\n\n{WORK_ON_IT}",
                 _started("started", goal))


def _parse(command: click.Command, args: list[str]) -> dict:
    """Options parsed by the CLI's own declarations, so the errors are the CLI's too."""
    with command.make_context(f"{COMMAND} {command.name}", args, help_option_names=[]) as ctx:
        return dict(ctx.params)


def _brief(goal: Goal) -> str:
    lines = ["Objective:", goal.objective, "",
             "Stopping conditions (they run by themselves each time you stop):", *render.condition_lines(goal),
             f"Budget: {render.budget_line(goal)}",
             _judge(goal), *render.plan_lines(goal)]
    return "\n".join(lines)


def _started(verb: str, goal: Goal) -> str:
    """The start message the user sees: what will be enforced (checks, judge) and the budget, in two lines."""
    checks, budget = story.headline(goal)
    return f"goal-convergence: {verb} {goal.goal_id}: {checks}\n{budget}"


def _judge(goal: Goal) -> str:
    missing = judge.unavailable(goal)
    if missing:
        return f"Judge: {judge.who(goal)}. Note: {missing}."
    if goal.oracle.provider == "conditions":
        return f"Judge: {judge.who(goal)}."
    model = "" if goal.oracle.provider == "command" else ", a different model with read-only access,"
    return f"Judge: {judge.who(goal)}{model} reviews every attempt."


def _goal_id(call: _Call) -> str | None:
    """The goal id the words name, if any: the subcommands find the goal meant from it (lookup.resolve)."""
    ids = [a for a in call.args if not a.startswith("-")]
    if len(ids) > 1 or (ids and not GOAL_ID_RE.match(ids[0])):
        raise InvalidInput(
            f"`{call.sub}` takes at most one goal id like goal-1a2b3c4d (got {' '.join(ids)!r}). An objective "
            f"cannot begin with {', '.join(SUBCOMMANDS)}: to start a goal, reword it (e.g. \"make sure ...\")")
    return ids[0] if ids else None


def _where(call: _Call) -> dict:
    return {"session_id": call.session_id, "project": call.cwd}


def _no_flags(call: _Call) -> None:
    flags = [a for a in call.args if a.startswith("-")]
    if flags:
        raise InvalidInput(f"`{call.sub}` takes no flags (got {' '.join(flags)}); see {COMMAND} help")


def _pause(call: _Call) -> Reply:
    _no_flags(call)
    goal = pause.pause(call.store, _goal_id(call), **_where(call))
    return Reply(f"goal-convergence paused goal {goal.goal_id}: its checks no longer run when you stop, and its "
                 f"clock is stopped. Stop working on it. To carry on later: {COMMAND} resume {goal.goal_id}",
                 f"goal-convergence: paused {goal.goal_id}")


def _abandon(call: _Call) -> Reply:
    _no_flags(call)
    goal = abandon.abandon(call.store, _goal_id(call), **_where(call))
    return Reply(f"goal-convergence abandoned goal {goal.goal_id}; it ended as failed (cancelled). Stop working on it.",
                 f"goal-convergence: abandoned {goal.goal_id}")


def _resume(call: _Call) -> Reply:
    params = _parse(RESUME, call.args)
    if params.get("session_id"):
        raise InvalidInput("`resume` binds the goal to this session; leave out --session")
    call.args = [params["goal_id"]] if params.get("goal_id") else []
    limits = {k: params[k] for k in ("max_iterations", "max_duration", "max_dollars", "max_tokens")}
    goal = resume.resume(call.store, _goal_id(call), **_where(call), limits=limits, agent=call.agent)
    done = f"{plural(goal.spent.iterations, 'iteration')} so far"
    hint = f"\nThe oracle's last hint: {goal.last_hint}" if goal.last_hint else ""
    return Reply(f"goal-convergence resumed goal {goal.goal_id} ({done}), now bound to this session.\n\n"
                 f"{_brief(goal)}{hint}\n\n{WORK_ON_IT}",
                 _started("resumed", goal) + f" (spent: {render.budget_line(goal)})")


def _status(call: _Call) -> Reply:
    _no_flags(call)
    found = status.find(call.store, _goal_id(call), **_where(call))
    return Reply(f"{_noted(found.note)}{render.status(found.goal)}\n\n"
                 f"Show this status to the user; do not start work because of it.")


def _noted(note: str | None) -> str:
    return f"({note})\n" if note else ""


def _list(call: _Call) -> Reply:
    show_all = call.args == ["--all"]
    if call.args and not show_all:
        raise InvalidInput(f"`list` takes only --all (got {' '.join(call.args)})")
    found = listing.goals(call.store.root, True, call.store.quarantined)
    listed = output.listed("\n".join(listing.table(found, show_all)), call.store.root)
    return Reply(f"{listed}\n\nShow this list to the user; do not start work because of it.")


def _check(call: _Call) -> Reply:
    _no_flags(call)
    found, evidence = check.check(call.store, _goal_id(call), **_where(call))
    table = render.evidence_table(evidence)
    return Reply(f"{_noted(found.note)}The checks of goal {found.goal.goal_id}, run now (not counted as an iteration):\n{table}\n\n"
                 f"Show these results to the user.")


def _checkpoints(call: _Call) -> Reply:
    """`diff` and `rewind`: the CLI's, on the named goal or else this session's or the project's."""
    rest = [a for a in call.args if not GOAL_ID_RE.match(a)]
    call.args = [a for a in call.args if GOAL_ID_RE.match(a)]
    found = lookup.shown(call.store, _goal_id(call), call.cwd, session_id=call.session_id)
    return _pass_through(call.sub, [found.goal.goal_id, *rest], call.cwd, _noted(found.note))


def _report(call: _Call) -> Reply:
    params = _parse(REPORT, call.args)
    to = call.cwd / params["output"] if params["output"] else None
    written = report.write(call.store, params["goal_id"], call.cwd, session_id=call.session_id, to=to,
                           all_goals=params["all_goals"])
    return Reply(f"goal-convergence {written.text()}\n\nShow the user this path: the page opens in any browser, with "
                 f"no network access needed. Do not start work because of it.",
                 f"goal-convergence: report at {written.main}")


def _help(call: _Call) -> Reply:
    flags = "\n".join(f"    {p.opts[0]}{'' if p.is_flag else ' VALUE'}  {p.help or ''}" for p in NEW.params
                      if isinstance(p, click.Option) and p.name != "session_id")
    return Reply(f"""{COMMAND}: work on a goal until checks a machine can run pass and an independent oracle agrees.

  {COMMAND} OBJECTIVE [FLAGS]   start a goal bound to this session. The objective is the text up to the
      first --flag; flag values may be quoted. With no condition flags, the checks are inferred from the
      objective and the project. Flags:
{flags}
  {COMMAND} pause [ID]          stop the loop at the next stop (and its clock)
  {COMMAND} resume [ID] [--max-iterations N] [--max-duration D] [--max-dollars X]
                                 carry a goal on in this session (raise the budget of an escalated one)
  {COMMAND} status [ID]         show a goal
  {COMMAND} list [--all]        list open goals (--all: every goal)
  {COMMAND} abandon [ID]        end a goal as failed (cancelled)
  {COMMAND} check [ID]          run a goal's checks now, without counting an iteration
  {COMMAND} diff [ID] [N [M]]   what iteration N changed (default: the latest), or from N to M
  {COMMAND} rewind [ID] N|--best [--force]
                                 bring the files back to iteration N's checkpoint (undoable)
  {COMMAND} report [ID] [--all] [--output PATH]
                                 write a goal's report, one HTML page (--all: the project's goals and an index)

Unlike Claude Code's built-in /goal, whose evaluator only reads the conversation, these goals are checked
by running their commands and judged by a second model. Show this help to the user.""")


def _parser(name: str, *declarations: Callable) -> click.Command:
    """`goal <name>`'s arguments, declared as the CLI declares them, for parsing only."""
    fn = lambda **_: None  # never called: the slash command calls the library itself
    for declare in reversed(declarations):
        fn = declare(fn)
    return click.command(name)(fn)


NEW = _parser("new", click.argument("objective"), goal_options, budget_options(defaults=True))
RESUME = _parser("resume", click.argument("goal_id", required=False), session_option, budget_options(defaults=False))
REPORT = _parser("report", report_options)

SUBCOMMANDS: dict[str, Callable[[_Call], Reply]] = {
    "pause": _pause, "resume": _resume, "status": _status, "list": _list, "abandon": _abandon,
    "check": _check, "diff": _checkpoints, "rewind": _checkpoints, "report": _report, "help": _help,
}


def _pass_through(name: str, args: list[str], cwd: Path, note: str = "") -> Reply:
    """Run `goal <name> ...` as the CLI itself would, and hand its output over. In this process, as the person's
    (person.py): Claude Code, whose child this hook is, may be a recorded maker, and a child process could not
    prove it was started by the person's slash command rather than by the maker."""
    from ...cli import app, person

    out = io.StringIO()
    with person.by_person(), contextlib.chdir(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = app.main([name, *args])
    shown = " ".join(shlex.quote(a) for a in ["goal", name, *args])
    # the heartbeat is quiet when nothing changed, which is right for cron and puzzling in a session
    quiet = "nothing new: no check failed that is not already a goal or a triage item" if name == "heartbeat" else ""
    output = out.getvalue().strip() or quiet or "(no output)"
    return Reply(f"{note}Output of `{shown}` (exit {code}):\n{output}\n\nShow this to the user.")
