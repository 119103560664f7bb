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
  73  a file of the home may not be written: a read-only disk, no permission (the message names the path)
  74  a file of the home could not be written whole: the disk or the quota is full (the message names the path)
  77  refused: a command that creates or changes a goal, run from inside a maker (person.py)
  75  `goal run`: someone paused the goal while it ran
  130 interrupted
"""

from __future__ import annotations

import os

import click

from ..errors import (EXIT_DATA, EXIT_INTERRUPTED, EXIT_NOT_FOUND, EXIT_SOFTWARE, EXIT_USAGE, FILESYSTEM_ERRNOS,
                      GoalConvergenceError, disk_error)
from . import output, person
from .commands import (abandon, blocked, check, demo, diff, heartbeat, list_goals, new, pause, report, resume, rewind,
                       run, status, triage, wave)

# Each command imports what it needs when it runs: `goal list`, typed all day, must not pay for pydantic,
# the models and the loop that the other commands load.
READS_INDEX_ONLY = ("list",)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="goal-convergence")
def cli() -> None:
    """Keep a coding agent working on a goal until real checks pass and an independent oracle agrees."""
    if click.get_current_context().invoked_subcommand not in READS_INDEX_ONLY:  # no setting applies to those
        from ..storage import config

        config.env_settings()  # a bad setting fails here, before any work (errors.py)


for _command in (new.new_cmd, demo.demo_cmd, list_goals.list_cmd, status.status_cmd, pause.pause_cmd,
                 abandon.abandon_cmd, resume.resume_cmd, check.check_cmd, report.report_cmd, run.run_cmd,
                 triage.triage_group, diff.diff_cmd, rewind.rewind_cmd, wave.wave_cmd, heartbeat.heartbeat_cmd,
                 blocked.blocked_cmd):
    cli.add_command(person.guarded(_command))


def main(argv: list[str] | None = None, group: click.Group = cli) -> int:
    """Run the CLI (or ``group``, the CLI with other front ends' commands) and map every outcome to an exit
    code, in one place."""
    with output.safe_streams():  # every word printed, errors too, is neutralised for the terminal
        return _main(argv, group)


def _main(argv: list[str] | None, group: click.Group) -> int:
    try:
        result = group.main(args=argv, prog_name="goal", standalone_mode=False)
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
    except OSError as exc:
        if exc.errno not in FILESYSTEM_ERRNOS:
            return _unexpected()
        error = disk_error(exc)  # a full or read-only disk is the user's to fix, not a bug to report
        click.echo(f"Error: {error}", err=True)
        return error.exit_code  # type: ignore[attr-defined]
    except Exception:
        return _unexpected()


def _unexpected() -> int:
    """A failure no error of ours describes (call it inside the ``except``): logged in full, one line on the
    terminal."""
    if os.environ.get("GOAL_CONVERGENCE_RAISE_ERRORS"):
        raise  # noqa: PLE0704 - called only from an except clause, where the failure is being handled
    import traceback

    from ..system.log import log_error

    details = traceback.format_exc()
    path = log_error("cli", details)
    where = f"details are in {path}" if path else f"it could not be logged:\n{details.rstrip()}\n"
    click.echo(f"Error: an unexpected failure; {where}. Please report it.", err=True)
    return EXIT_SOFTWARE
