"""The `goal` command line. Each command parses, calls one library function and prints.

Exit codes (mapped here and only here; the errors carry theirs, errors.py). No failure of a command
uses a code a stop reason uses, so a script can tell "the goal stopped" from "the command was wrong":
  0   success (for `goal run`: converged; for `goal check`: every condition passes)
  1-7 `goal run`: the stop reason (1 unfixable, 2 stuck, 3 timeout, 4 ceiling, 5 budget-exhausted,
      6 cancelled, 7 judge-error); `goal check`: 1 when a condition fails; `goal heartbeat --run`: the
      code of the first goal it ran that did not converge (0 when all did, or none ran); `goal wave` (and
      `goal heartbeat --run --parallel K`): the worst (highest) of its goals' codes, a converged goal whose
      work could not be merged counting as 1
  64  usage: an unknown command or flag, a missing argument, a flag that cannot apply, several goals where
      one was meant (click's own usage errors too)
  65  refused input: a bad value or id, a broken hard rule, a move the goal's state does not allow
  66  no such goal or triage item
  69  unavailable: no oracle can run here, the maker's tool is missing
  70  the command could not run (a corrupt file, an unexpected failure)
  75  `goal run`: someone paused the goal while it ran
  130 interrupted
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from . import diff_command, index, rewind_command, wave_command
from .actions.commands import action_group
from .errors import EXIT_DATA, EXIT_INTERRUPTED, EXIT_NOT_FOUND, EXIT_SOFTWARE, EXIT_USAGE, GoalConvergenceError
from .options import attempts_option, budget_options, given, goal_options, report_options, session_option, spec_from

if TYPE_CHECKING:
    from .render import LiveProgress
    from .store import Store

# Each command imports what it needs when it runs: `goal list`, typed all day, must not pay for pydantic,
# the models and the loop that the other commands load.
READS_INDEX_ONLY = ("list",)


def _store() -> Store:
    from .store import Store

    store = Store()
    # Whatever the command had to quarantine on the way is reported when it ends, whatever it did.
    click.get_current_context().call_on_close(lambda: _report_quarantine(store.quarantined))
    return store


def _echo_json(data: object) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def _echo_lines(lines: Iterable[str], batch: int = 256) -> None:
    """Lines written as they are made, never held whole (a few hundred at a time: click flushes each echo)."""
    held: list[str] = []
    for line in lines:
        held.append(line)
        if len(held) == batch:
            click.echo("\n".join(held))
            held.clear()
    if held:
        click.echo("\n".join(held))


def _report_quarantine(moved: list[tuple[Path, str]]) -> None:
    """Report each quarantined file once, however often this is called."""
    while moved:
        path, reason = moved.pop(0)
        click.echo(f"warning: quarantined {path}: {reason}", err=True)


def _listed(table: str, store: Store) -> str:
    """A listing, then the quarantined files until they are dismissed (quarantine.py)."""
    from . import quarantine

    return "\n\n".join(filter(None, [table, quarantine.notice(store.root)]))


def _live_progress(json_out: bool) -> LiveProgress | None:
    """Conditions running, drawn live on a terminal (never into --json output or a pipe)."""
    from .render import LiveProgress

    return None if json_out or not sys.stderr.isatty() else LiveProgress()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="goal-convergence")
def cli() -> None:
    """Keep a coding agent working on a goal until real checks pass and an independent oracle agrees."""
    if click.get_current_context().invoked_subcommand not in READS_INDEX_ONLY:  # no setting applies to those
        from . import config

        config.env_settings()  # a bad setting fails here, before any work (errors.py)


@cli.command("new")
@click.argument("objective")
@goal_options
@attempts_option
@budget_options(defaults=True)
@click.option("--json", "json_out", is_flag=True, help="Print the goal document.")
def new_cmd(objective: str, json_out: bool, **options) -> None:
    """Create a goal. With no condition flags, conditions are inferred from OBJECTIVE and the project."""
    from . import goals, render

    store = _store()
    goal = goals.new_goal(store, spec_from(objective, options), on_progress=_live_progress(json_out))
    _echo_json(goal.dump()) if json_out else click.echo(render.created(goal))


@cli.command("demo")
@click.option("--dir", "folder", type=click.Path(file_okay=False, path_type=Path),
              help="A new or empty folder for the sample project and its goal (default: a new temp folder); kept.")
@click.option("--keep", is_flag=True,
              help="Record the demo goal in your own goal home (`goal list --all` shows it), not the demo folder's.")
def demo_cmd(folder: Path | None, keep: bool) -> int:
    """Watch the real loop fix a bundled sample project: no API key or Claude Code needed.
    A scripted maker fixes a bug, cheats (caught), then fixes the rest. Exits 0 when the goal converges."""
    from . import demo

    return demo.run(folder, keep=keep, echo=click.echo, on_progress=_live_progress(False)).exit_code


@cli.command("list")
@click.option("--all", "show_all", is_flag=True, help="Include converged and failed goals.")
@click.option("--json", "json_out", is_flag=True, help="Print JSON.")
def list_cmd(show_all: bool, json_out: bool) -> None:
    """List open goals (active, paused, escalated), newest first."""
    from . import listing, quarantine

    home, moved = index.home(), []
    click.get_current_context().call_on_close(lambda: _report_quarantine(moved))
    found = listing.goals(home, show_all, moved)
    _echo_lines(listing.as_json(found) if json_out else listing.table(found))
    notice = "" if json_out else quarantine.notice(home)
    if notice:
        click.echo(f"\n{notice}")


@cli.command("status")
@click.argument("goal_id", required=False)
@click.option("--json", "json_out", is_flag=True, help="Print the goal document.")
def status_cmd(goal_id: str | None, json_out: bool) -> None:
    """Show a goal (default: the open goal of this project)."""
    from . import goals, render

    goal = goals.resolve(_store(), goal_id, states=("active", "paused", "escalated"))
    _echo_json(goal.dump()) if json_out else click.echo(render.status(goal))


@cli.command("pause")
@click.argument("goal_id", required=False)
@click.option("--json", "json_out", is_flag=True, help="Print the goal document.")
def pause_cmd(goal_id: str | None, json_out: bool) -> None:
    """Pause a goal: the loop stops at the next stop and paused time is not charged."""
    from . import goals

    store = _store()
    goal = goals.move(store, goals.resolve(store, goal_id, states=("active",)).goal_id, "pause")
    _echo_json(goal.dump()) if json_out else click.echo(f"paused {goal.goal_id}; `goal resume {goal.goal_id}` carries on")


@cli.command("abandon")
@click.argument("goal_id", required=False)
@click.option("--keep-checkpoints", is_flag=True, help="Keep its checkpoint refs (by default they are removed).")
@click.option("--json", "json_out", is_flag=True, help="Print the goal document.")
def abandon_cmd(goal_id: str | None, keep_checkpoints: bool, json_out: bool) -> None:
    """Abandon a goal: it ends as failed (stop reason: cancelled)."""
    from . import goals

    store = _store()
    goal = goals.move(store, goals.resolve(store, goal_id).goal_id, "abandon", keep_checkpoints=keep_checkpoints)
    _echo_json(goal.dump()) if json_out else click.echo(f"abandoned {goal.goal_id} (failed, cancelled)")


@cli.command("resume")
@click.argument("goal_id", required=False)
@session_option
@budget_options(defaults=False)
@click.option("--json", "json_out", is_flag=True, help="Print the goal document.")
def resume_cmd(goal_id: str | None, session_id: str | None, json_out: bool, **limits) -> None:
    """Carry on with a paused, escalated or detached goal, optionally with a raised budget."""
    from . import goals, render

    store = _store()
    target = goals.resolve(store, goal_id, states=("paused", "active", "escalated"))
    raised = {k: v for k, v in limits.items() if v is not None}
    goal = goals.resume(store, target.goal_id, session_id=session_id, raise_budget=raised)
    _echo_json(goal.dump()) if json_out else click.echo(f"resumed {goal.goal_id}\n{render.status(goal)}")


@cli.command("check")
@click.argument("goal_id", required=False)
@click.option("--json", "json_out", is_flag=True, help="Print the evidence as JSON.")
def check_cmd(goal_id: str | None, json_out: bool) -> int:
    """Run a goal's stopping conditions now. Exit 0 only if all pass (1 if any fails)."""
    from . import conditions, goals, render

    goal = goals.resolve(_store(), goal_id, states=index.OPEN_STATES)
    evidence = conditions.check_goal_conditions(goal, on_progress=_live_progress(json_out))
    _echo_json([e.dump() for e in evidence]) if json_out else click.echo(render.evidence_table(evidence))
    return 0 if all(e.passed for e in evidence) else 1


@cli.command("report")
@report_options
@click.option("--open", "open_it", is_flag=True, help="Then open it in the browser.")
@click.option("--json", "json_out", is_flag=True, help="Print {path, index, reports}.")
def report_cmd(goal_id: str | None, output: Path | None, open_it: bool, all_goals: bool, json_out: bool) -> None:
    """Write a goal's report: one self-contained HTML page (default: the project's open goal, else its newest)."""
    from .report import page  # Jinja2 and the templates: only for this command

    written = page.write(_store(), goal_id, Path.cwd(), output=output, all_goals=all_goals)
    _echo_json(written.summary()) if json_out else click.echo(written.text())
    note = page.open_in_browser(written.main) if open_it else None
    if note:
        click.echo(note, err=True)


@cli.command("run")
@click.argument("target", required=False)
@goal_options
@budget_options(defaults=True)
@click.option("--maker", type=click.Choice(["claude"]), help="The maker: Claude Code in print mode (default).")
@click.option("--maker-cmd", help="The maker: any shell command (gets GOAL_HINT and GOAL_FILE).")
@attempts_option
@click.option("--branch", help="Leave the converged work on a new branch of this name, not in your files.")
@click.option("--json", "json_out", is_flag=True, help="Print the ledger {met, stop, turns, totalCostUsd, evidence}.")
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path), hidden=True,
              help="A wave's worktree to work in (wave.py); the goal file keeps naming the project.")
def run_cmd(target: str | None, maker: str | None, maker_cmd: str | None, branch: str | None, json_out: bool,
            workdir: Path | None, **options) -> int:
    """Run a goal headless until it ends: TARGET is a goal id, or an OBJECTIVE for a new goal
    (with the condition and budget flags of `goal new`). Exits with the stop reason's code."""
    from . import makers, render, runner

    store = _store()
    goal_id = runner.target_goal(store, target, lambda: spec_from(target or "", options), _live_progress(json_out),
                                 given=given(options))
    chosen = makers.CommandMaker(maker_cmd) if maker_cmd else makers.ClaudeMaker(options.get("maker_model"))
    live = sys.stderr.isatty() and not json_out
    if workdir:
        from .wave import interrupt_on_term

        interrupt_on_term()
    result = runner.run_goal(store, goal_id, chosen, attempts=options.get("attempts"), branch=branch, workdir=workdir,
                             on_iteration=(lambda o: click.echo(render.iteration_line(o), err=True)) if live else None)
    _echo_json(result.ledger()) if json_out else click.echo(render.run_summary(result.goal, result.stop, result.note))
    return result.exit_code


@cli.group("triage")
def triage_group() -> None:
    """The inbox of goals that need a person: escalated goals and heartbeat findings."""


@triage_group.command("list")
@click.option("--all", "show_all", is_flag=True, help="Include acted and dismissed items.")
@click.option("--json", "json_out", is_flag=True, help="Print JSON.")
def triage_list_cmd(show_all: bool, json_out: bool) -> None:
    """List triage items, newest first."""
    from . import render, triage

    store = _store()
    items = triage.list_items(store, show_all)
    _echo_json([i.dump() for i in items]) if json_out else click.echo(_listed(render.triage_table(items), store))


@triage_group.command("show")
@click.argument("triage_id")
@click.option("--json", "json_out", is_flag=True, help="Print the item document.")
def triage_show_cmd(triage_id: str, json_out: bool) -> None:
    """Show one triage item."""
    from . import render
    from .models import TriageItem

    item = _store().load(TriageItem, triage_id)
    _echo_json(item.dump()) if json_out else click.echo(render.triage_item(item))


@triage_group.command("act")
@click.argument("triage_id")
@click.argument("action", type=click.Choice(["goal"]), default="goal")
@budget_options(defaults=False)
@click.option("--json", "json_out", is_flag=True, help="Print the goal document.")
def triage_act_cmd(triage_id: str, action: str, json_out: bool, **limits) -> None:
    """Act on an item: re-open its goal (budget flags set the new limits) or make a goal from it."""
    from . import render, triage

    goal = triage.act(_store(), triage_id, {k: v for k, v in limits.items() if v is not None})
    _echo_json(goal.dump()) if json_out else click.echo(f"{triage_id} acted on: {goal.goal_id} is active\n{render.status(goal)}")


@triage_group.command("dismiss")
@click.argument("triage_id")
@click.option("--keep-checkpoints", is_flag=True, help="Keep its goal's checkpoint refs (by default they are removed).")
def triage_dismiss_cmd(triage_id: str, keep_checkpoints: bool) -> None:
    """Dismiss an item (nothing more will be done about it), or a quarantined file that the lists show."""
    from . import quarantine, triage

    store = _store()
    if quarantine.is_entry(store.root, triage_id):
        quarantine.dismiss(store.root, triage_id)
    else:
        triage.dismiss(store, triage_id, keep_checkpoints=keep_checkpoints)
    click.echo(f"dismissed {triage_id}")


cli.add_command(diff_command.diff_cmd)
cli.add_command(rewind_command.rewind_cmd)
cli.add_command(wave_command.wave_cmd)


@cli.command("slash")
@click.option("--session", "session_id", help="The Claude Code session a new or resumed goal is bound to.")
def slash_cmd(session_id: str | None) -> None:
    """Run /goal-convergence:goal with its raw argument text read from stdin (no shell parse).

    Prints text for the model and exits 0 even on bad arguments: Claude Code aborts a slash command
    whose helper fails, and the error text is what the user needs to see."""
    from .claude_code import slash

    reply = slash.run_command("goal", click.get_text_stream("stdin").read(), session_id=session_id, cwd=os.getcwd())
    click.echo(reply.text)


@cli.command("heartbeat")
@click.option("--project", type=click.Path(file_okay=False), help="Project folder (default: here).")
@click.option("--mode", type=click.Choice(["goal", "triage"]),
              help="What a new failure becomes (default: the config's mode, else goal).")
@click.option("--run", "run_goals", is_flag=True,
              help="Then run the project's open heartbeat goals no session holds, headless, one after another "
                   "(or --parallel K at a time).")
@click.option("--parallel", type=click.IntRange(min=1), default=1, show_default=True,
              help="With --run: that many goals at once, as a wave (`goal wave`: worktrees, merged back in order).")
@click.option("--oracle", type=click.Choice(["auto", "anthropic", "claude-cli", "command", "conditions"]),
              help="The heartbeat goals' oracle, over the settings' `oracle`; `conditions` means no model at all.")
@click.option("--maker", type=click.Choice(["claude"]), help="With --run: Claude Code in print mode (default).")
@click.option("--maker-cmd", help="With --run: any shell command as the maker (gets GOAL_HINT and GOAL_FILE).")
@click.option("--json", "json_out", is_flag=True, help="Always print a JSON summary.")
def heartbeat_cmd(project: str | None, mode: str | None, run_goals: bool, parallel: int, oracle: str | None,
                  maker: str | None, maker_cmd: str | None, json_out: bool) -> int:
    """Run the project's checks; each new failure becomes a goal (or a triage item), deduplicated and
    rate-limited. Prints nothing unless something new was made, skipped or run (cron-friendly)."""
    from . import heartbeat, makers

    chosen = makers.CommandMaker(maker_cmd) if maker_cmd else makers.ClaudeMaker() if maker else None
    report = heartbeat.beat(_store(), Path(project or os.getcwd()), mode=mode, run=run_goals, maker=chosen,
                            oracle=oracle, parallel=parallel)
    if json_out:
        _echo_json(report.summary())
    elif report.changed:
        click.echo(report.text())
    return report.exit_code


cli.add_command(action_group)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and map every outcome to an exit code, in one place."""
    try:
        result = cli.main(args=argv, prog_name="goal", standalone_mode=False)
        return result if isinstance(result, int) else 0
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()  # click's own codes (2 for a usage error, 1 otherwise) are stop reasons' codes
        return (EXIT_USAGE if isinstance(exc, click.UsageError) else
                EXIT_NOT_FOUND if isinstance(exc, click.FileError) else EXIT_DATA)
    except (click.Abort, KeyboardInterrupt):
        click.echo("interrupted", err=True)
        return EXIT_INTERRUPTED
    except GoalConvergenceError as exc:
        click.echo(f"Error: {exc}", err=True)
        return exc.exit_code
    except Exception:
        if os.environ.get("GOAL_CONVERGENCE_RAISE_ERRORS"):
            raise
        import traceback

        from .log import log_error

        path = log_error("cli", traceback.format_exc())
        click.echo(f"Error: an unexpected failure; details are in {path}. Please report it.", err=True)
        return EXIT_SOFTWARE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
