"""One error root. Every message says what went wrong and what to do next.

The CLI maps these to exit codes in one place (``cli.main``): input the user can fix exits 2,
everything else that stops a command from running at all exits 70 (DESIGN.md).
"""

from __future__ import annotations

from pathlib import Path


class GoalConvergenceError(Exception):
    """Root of every error this package raises on purpose."""

    exit_code = 70


class InvalidInput(GoalConvergenceError):
    """The user gave something we cannot use: a bad flag value, id, or a broken hard rule."""

    exit_code = 2


class GoalNotFound(GoalConvergenceError):
    """No goal matches what was asked for."""


class AmbiguousGoal(GoalConvergenceError):
    """Several goals could be meant; the message lists them. A usage error: name one and rerun."""

    exit_code = 2


class IllegalTransition(GoalConvergenceError):
    """A state change the lifecycle does not allow."""


class CorruptFile(GoalConvergenceError):
    """A goal or triage file did not parse or validate (it has been quarantined)."""

    moved_to: Path | None = None  # where the quarantined file is now
    reason: str = ""


class OracleError(GoalConvergenceError):
    """The oracle could not produce a valid verdict (a judge error)."""


class OracleUnavailable(GoalConvergenceError):
    """No oracle can be used with the current set-up."""


class PriceUnknown(GoalConvergenceError):
    """A model has no price; money is never counted as zero."""


class MakerError(GoalConvergenceError):
    """The maker could not run at all."""
