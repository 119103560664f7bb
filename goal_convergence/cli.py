"""The `goal` command line. Each command parses, calls one library function and prints.

Exit codes (mapped here and only here; the errors carry theirs, errors.py). No failure of a command
uses a code a stop reason uses, so a script can tell "the goal stopped" from "the command was wrong":
  0   success (for `goal run`: converged; for `goal check`: every condition passes)
  1-7 `goal run`: the stop reason (1 unfixable, 2 stuck, 3 timeout, 4 ceiling, 5 budget-exhausted,
      6 cancelled, 7 judge-error); `goal check`: 1 when a condition fails; `goal heartbeat --run`: the
      code of the first goal it ran that did not converge (0 when all did, or none ran)
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
from pathlib import Path

import click

from . import conditions, config, demo, goals, heartbeat, makers, quarantine, render, runner, triage
from .actions.commands import action_group
from .claude_code import slash
from .errors import EXIT_DATA, EXIT_INTERRUPTED, EXIT_NOT_FOUND, EXIT_SOFTWARE, EXIT_USAGE, GoalConvergenceError
from .index import OPEN_STATES
from .models import TriageItem
from .options import budget_options, given, goal_options, session_option, spec_from
from .store import Store


def _store() -> Store:
    store = Store()
    # Whatever the command had to quarantine on the way is reported when it ends, whatever it did.
    click.get_current_context().call_on_close(lambda: _report_quarantine(store))
    return store


def _echo_json(data: object) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def _report_quarantine(store: Store) -> None:
    """Report each quarantined file once, however often this is called."""
    while store.quarantined:
        path, reason = store.quarantined.pop(0)
        click.echo(f"warning: quarantined {path}: {reason}", err=True)


def _listed(table: str, store: Store) -> str:
    """A listing, then the quarantined files until they are dismissed (quarantine.py)."""
    return "\n\n".join(filter(None, [table, quarantine.notice(store.root)]))


def _live_progress(json_out: bool) -> render.LiveProgress | None:
    """Conditions running, drawn live on a terminal (never into --json output or a pipe)."""
    return None if json_out or not sys.stderr.isatty() else render.LiveProgress()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="goal-convergence")
def cli() -> None:
    """Keep a coding agent working on a goal until real checks pass and an independent oracle agrees."""
    config.env_settings()  # a bad setting fails here, before any work (errors.py)


@cli.command("new")
@click.argument("objective")
@goal_options
@budget_options(defaults=True)
@click.option("--json", "json_out", is_flag=True, help="Print the goal document.")
def new_cmd(objective: str, json_out: bool, **options) -> None:
    """Create a goal. With no condition flags, conditions are inferred from OBJECTIVE and the project."""
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
    return demo.run(folder, keep=keep, echo=click.echo, on_progress=_live_progress(False)).exit_code


@cli.command("list")
@click.option("--all", "show_all", is_flag=True, help="Include converged and failed goals.")
@click.option("--json", "json_out", is_flag=True, help="Print JSON.")
def list_cmd(show_all: bool, json_out: bool) -> None:
    """List open goals (active, paused, escalated), newest first."""
    store = _store()
    found = goals.list_goals(store, show_all)
    _echo_json(found) if json_out else click.echo(_listed(render.goal_table(found), store))


@cli.command("status")
@click.argument("goal_id", required=False)
@click.option("--json", "json_out", is_flag=True, help="Print the goal document.")
def status_cmd(goal_id: str | None, json_out: bool) -> None:
    """Show a goal (default: the open goal of this project)."""
    goal = goals.resolve(_store(), goal_id, states=("active", "paused", "escalated"))
    _echo_json(goal.dump()) if json_out else click.echo(render.status(goal))


@cli.command("pause")
@click.argument("goal_id", required=False)
@click.option("--json", "json_out", is_flag=True, help="Print the goal document.")
def pause_cmd(goal_id: str | None, json_out: bool) -> None:
    """Pause a goal: the loop stops at the next stop and paused time is not charged."""
    store = _store()
    goal = goals.move(store, goals.resolve(store, goal_id, states=("active",)).goal_id, "pause")
    _echo_json(goal.dump()) if json_out else click.echo(f"paused {goal.goal_id}; `goal resume {goal.goal_id}` carries on")


@cli.command("abandon")
@click.argument("goal_id", required=False)
@click.option("--json", "json_out", is_flag=True, help="Print the goal document.")
def abandon_cmd(goal_id: str | None, json_out: bool) -> None:
    """Abandon a goal: it ends as failed (stop reason: cancelled)."""
    store = _store()
    goal = goals.move(store, goals.resolve(store, goal_id).goal_id, "abandon")
    _echo_json(goal.dump()) if json_out else click.echo(f"abandoned {goal.goal_id} (failed, cancelled)")


@cli.command("resume")
@click.argument("goal_id", required=False)
@session_option
@budget_options(defaults=False)
@click.option("--json", "json_out", is_flag=True, help="Print the goal document.")
def resume_cmd(goal_id: str | None, session_id: str | None, json_out: bool, **limits) -> None:
    """Carry on with a paused, escalated or detached goal, optionally with a raised budget."""
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
    goal = goals.resolve(_store(), goal_id, states=OPEN_STATES)
    evidence = conditions.check_goal_conditions(goal, on_progress=_live_progress(json_out))
    _echo_json([e.dump() for e in evidence]) if json_out else click.echo(render.evidence_table(evidence))
    return 0 if all(e.passed for e in evidence) else 1


@cli.command("run")
@click.argument("target", required=False)
@goal_options
@budget_options(defaults=True)
@click.option("--maker", type=click.Choice(["claude"]), help="The maker: Claude Code in print mode (default).")
@click.option("--maker-cmd", help="The maker: any shell command (gets GOAL_HINT and GOAL_FILE).")
@click.option("--json", "json_out", is_flag=True, help="Print the ledger {met, stop, turns, totalCostUsd, evidence}.")
def run_cmd(target: str | None, maker: str | None, maker_cmd: str | None, json_out: bool, **options) -> int:
    """Run a goal headless until it ends: TARGET is a goal id, or an OBJECTIVE for a new goal
    (with the condition and budget flags of `goal new`). Exits with the stop reason's code."""
    store = _store()
    goal_id = runner.target_goal(store, target, lambda: spec_from(target or "", options), _live_progress(json_out),
                                 given=given(options))
    chosen = makers.CommandMaker(maker_cmd) if maker_cmd else makers.ClaudeMaker(options.get("maker_model"))
    live = sys.stderr.isatty() and not json_out
    result = runner.run_goal(store, goal_id, chosen,
                             on_iteration=(lambda o: click.echo(render.iteration_line(o), err=True)) if live else None)
    _echo_json(result.ledger()) if json_out else click.echo(render.run_summary(result.goal, result.stop))
    return result.exit_code


@cli.group("triage")
def triage_group() -> None:
    """The inbox of goals that need a person: escalated goals and heartbeat findings."""


@triage_group.command("list")
@click.option("--all", "show_all", is_flag=True, help="Include acted and dismissed items.")
@click.option("--json", "json_out", is_flag=True, help="Print JSON.")
def triage_list_cmd(show_all: bool, json_out: bool) -> None:
    """List triage items, newest first."""
    store = _store()
    items = triage.list_items(store, show_all)
    _echo_json([i.dump() for i in items]) if json_out else click.echo(_listed(render.triage_table(items), store))


@triage_group.command("show")
@click.argument("triage_id")
@click.option("--json", "json_out", is_flag=True, help="Print the item document.")
def triage_show_cmd(triage_id: str, json_out: bool) -> None:
    """Show one triage item."""
    item = _store().load(TriageItem, triage_id)
    _echo_json(item.dump()) if json_out else click.echo(render.triage_item(item))


@triage_group.command("act")
@click.argument("triage_id")
@click.argument("action", type=click.Choice(["goal"]), default="goal")
@budget_options(defaults=False)
@click.option("--json", "json_out", is_flag=True, help="Print the goal document.")
def triage_act_cmd(triage_id: str, action: str, json_out: bool, **limits) -> None:
    """Act on an item: re-open its goal (budget flags set the new limits) or make a goal from it."""
    goal = triage.act(_store(), triage_id, {k: v for k, v in limits.items() if v is not None})
    _echo_json(goal.dump()) if json_out else click.echo(f"{triage_id} acted on: {goal.goal_id} is active\n{render.status(goal)}")


@triage_group.command("dismiss")
@click.argument("triage_id")
def triage_dismiss_cmd(triage_id: str) -> None:
    """Dismiss an item (nothing more will be done about it), or a quarantined file that the lists show."""
    store = _store()
    if quarantine.is_entry(store.root, triage_id):
        quarantine.dismiss(store.root, triage_id)
    else:
        triage.dismiss(store, triage_id)
    click.echo(f"dismissed {triage_id}")


@cli.command("slash")
@click.option("--session", "session_id", help="The Claude Code session a new or resumed goal is bound to.")
def slash_cmd(session_id: str | None) -> None:
    """Run /goal-convergence:goal with its raw argument text read from stdin (no shell parse).

    Prints text for the model and exits 0 even on bad arguments: Claude Code aborts a slash command
    whose helper fails, and the error text is what the user needs to see."""
    reply = slash.run_command("goal", click.get_text_stream("stdin").read(), session_id=session_id, cwd=os.getcwd())
    click.echo(reply.text)


@cli.command("heartbeat")
@click.option("--project", type=click.Path(file_okay=False), help="Project folder (default: here).")
@click.option("--mode", type=click.Choice(["goal", "triage"]),
              help="What a new failure becomes (default: the config's mode, else goal).")
@click.option("--run", "run_goals", is_flag=True,
              help="Then run the project's open heartbeat goals no session holds, headless, one after another.")
@click.option("--oracle", type=click.Choice(["auto", "anthropic", "claude-cli", "command", "conditions"]),
              help="The heartbeat goals' oracle, over the settings' `oracle`; `conditions` means no model at all.")
@click.option("--maker", type=click.Choice(["claude"]), help="With --run: Claude Code in print mode (default).")
@click.option("--maker-cmd", help="With --run: any shell command as the maker (gets GOAL_HINT and GOAL_FILE).")
@click.option("--json", "json_out", is_flag=True, help="Always print a JSON summary.")
def heartbeat_cmd(project: str | None, mode: str | None, run_goals: bool, oracle: str | None, maker: str | None,
                  maker_cmd: str | None, json_out: bool) -> int:
    """Run the project's checks; each new failure becomes a goal (or a triage item), deduplicated and
    rate-limited. Prints nothing unless something new was made, skipped or run (cron-friendly)."""
    chosen = makers.CommandMaker(maker_cmd) if maker_cmd else makers.ClaudeMaker() if maker else None
    report = heartbeat.beat(_store(), Path(project or os.getcwd()), mode=mode, run=run_goals, maker=chosen,
                            oracle=oracle)
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
