"""One error root, and the policy for when errors happen. Every message says what went wrong and
what to do next.

Each error carries its exit code, sysexits-style, so that no code a command's failure uses is one a
stop reason uses (1-7); ``cli.main`` maps every outcome to a code in one place and the goal is left
as it was: 64 a usage error (the command line itself), 65 input that is refused (a bad value, a
broken hard rule, a move the goal's state does not allow), 66 no such goal or item, 69 a tool or
service that is not there (an oracle, Claude Code), 70 anything else that kept the command from
running (a corrupt file, a bug), 73 a file of the home that may not be written (a read-only disk, no
permission), 74 one that could not be written whole (the disk or the quota full), 77 a command only a
person may run, run from inside a maker.
A hook never breaks the session it runs in: its error becomes one line for the user (hooks.py).

Nothing may fail halfway, after money was spent or a file was changed:

- Settings from the environment (``GOAL_CONVERGENCE_*``) are read and validated in one place,
  ``config.env_settings``, where a command or a hook starts, before any work: a bad value is
  InvalidInput naming the variable and an example of a good one.
- Whatever keeps the oracle from judging once an iteration has begun, an oracle that cannot be set
  up or priced (OracleUnavailable, PriceUnknown) or one that gives no valid verdict (OracleError),
  is that iteration's judge error (``JUDGE_ERRORS``), never an exception out of it: the maker's
  work is already charged, so the iteration is recorded with its costs, once, and three judge
  errors in a row escalate the goal as judge-error, the escalation saying what to fix. `goal run`
  sets the oracle up before its maker's first turn, so a run that could never be judged stops
  there (exit 69, or 70 for a price) with nothing spent.
- A change that depends on a document's state checks that state inside ``store.update``, under
  the document's lock, never before taking it.
- Notifying is never what fails: it runs once the end is on disk, and its problems are logged.
"""

from __future__ import annotations

import errno
import os
import reprlib
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


EXIT_USAGE = 64  # EX_USAGE
EXIT_DATA = 65  # EX_DATAERR
EXIT_NOT_FOUND = 66  # EX_NOINPUT
EXIT_UNAVAILABLE = 69  # EX_UNAVAILABLE
EXIT_SOFTWARE = 70  # EX_SOFTWARE
EXIT_CANTCREAT = 73  # EX_CANTCREAT
EXIT_IOERR = 74  # EX_IOERR
EXIT_NOPERM = 77  # EX_NOPERM
EXIT_INTERRUPTED = 130


class GoalConvergenceError(Exception):
    """Root of every error this package raises on purpose."""

    exit_code = EXIT_SOFTWARE


class InvalidInput(GoalConvergenceError):
    """The user gave something we cannot use: a bad flag value, id, or a broken hard rule."""

    exit_code = EXIT_DATA


class UsageError(InvalidInput):
    """The command line itself is wrong: a flag that cannot apply here, or several goals where one was meant."""

    exit_code = EXIT_USAGE


class GoalNotFound(GoalConvergenceError):
    """No goal (or triage item) matches what was asked for."""

    exit_code = EXIT_NOT_FOUND


class AmbiguousGoal(UsageError):
    """Several goals could be meant; the message lists them. A usage error: name one and rerun."""


class IllegalTransition(GoalConvergenceError):
    """A state change the lifecycle does not allow."""

    exit_code = EXIT_DATA


class CorruptFile(GoalConvergenceError):
    """A goal or triage file did not parse or validate (it has been quarantined)."""

    moved_to: Path | None = None  # where the quarantined file is now
    reason: str = ""


class OracleError(GoalConvergenceError):
    """The oracle could not produce a valid verdict (a judge error)."""


class OracleUnavailable(GoalConvergenceError):
    """No oracle can be used with the current set-up."""

    exit_code = EXIT_UNAVAILABLE


class PriceUnknown(GoalConvergenceError):
    """A model has no price; money is never counted as zero."""


class RunnerBusy(GoalConvergenceError):
    """Another live `goal run` works the goal: one runner a goal."""


class MakerRefused(GoalConvergenceError):
    """A maker tried to create or change a goal (its own judge, conditions, budget...): only a person may."""

    exit_code = EXIT_NOPERM


class MakerError(GoalConvergenceError):
    """The maker could not run at all."""

    exit_code = EXIT_UNAVAILABLE


# The file system's refusals a person can act on, and what to do about each.
_NO_ROOM = {errno.ENOSPC: "free some space on that disk", errno.EDQUOT: "free some space or raise your disk quota",
            errno.EFBIG: "raise the file size limit (`ulimit -f`)"}
_NOT_WRITABLE = {errno.EROFS: "the disk is mounted read-only; remount it read-write or set GOAL_CONVERGENCE_HOME "
                              "to a writable folder",
                 errno.EACCES: "give your user write access to it (`ls -ld` it) or set GOAL_CONVERGENCE_HOME to a "
                               "folder of your own",
                 errno.EPERM: "give your user write access to it (`ls -ld` it) or set GOAL_CONVERGENCE_HOME to a "
                              "folder of your own"}
FILESYSTEM_ERRNOS = frozenset(_NO_ROOM) | frozenset(_NOT_WRITABLE)


class DiskError(GoalConvergenceError, OSError):
    """A file could not be written (or read) for a reason of the file system's: a full disk or quota, a
    read-only disk, no permission. Still an OSError, so code that tolerates a failed write still does."""

    def __init__(self, code: int, path: object, doing: str = "write") -> None:
        super().__init__(code, os.strerror(code), os.fspath(path) if path is not None else None)
        self.exit_code = EXIT_IOERR if code in _NO_ROOM else EXIT_CANTCREAT
        self.doing = doing

    def __str__(self) -> str:
        what = f" {self.filename}" if self.filename else " a file under the goal-convergence home"
        advice = _NO_ROOM.get(self.errno) or _NOT_WRITABLE.get(self.errno) or "check the disk and try again"
        return (f"could not {self.doing}{what}: {self.strerror}; {advice}, then run the command again "
                f"(nothing was left half-written)")


class UntrustedPath(GoalConvergenceError):
    """A folder of the home that we did not make (a symlink, another user's): nothing is written through it."""

    exit_code = EXIT_CANTCREAT


def disk_error(exc: OSError, path: object = None, doing: str = "write") -> OSError:
    """``exc`` as a DiskError naming ``path`` (or the file it names) when the file system refused for a
    reason a person can fix, else ``exc`` itself."""
    if isinstance(exc, DiskError) or exc.errno not in FILESYSTEM_ERRNOS:
        return exc
    # A copy or a rename names two files; the second is the one being written (shutil puts the source first).
    named = exc.filename2 if exc.filename2 is not None else exc.filename
    return DiskError(exc.errno, path if path is not None else named, doing)


# What asking the oracle may raise that makes an iteration's judge error rather than an exception.
JUDGE_ERRORS = (OracleError, OracleUnavailable, PriceUnknown)


def problems(exc: ValidationError, limit: int = 3) -> str:
    """What pydantic refused, for a person: each problem with where it is and the value found there,
    ``state: Input should be 'active', ... (found 'running')``."""
    lines = []
    for e in exc.errors()[:limit]:
        found = e.get("input")
        shown = f" (found {reprlib.repr(found)})" if isinstance(found, str | int | float) else ""
        lines.append(f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}{shown}")
    return "; ".join(lines)
