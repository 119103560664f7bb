"""The error log under the home: where hooks and the CLI put what a user should not see as a traceback."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from ..errors import GoalConvergenceError
from . import files
from .index import home


def log_path() -> Path:
    return home() / "logs" / "goal-convergence.log"


def log_error(where: str, text: str) -> Path | None:
    """Append ``text`` to the log; the log's path, or None when it could not be written (a full disk)."""
    path = log_path()
    try:
        files.private_folder(path.parent)
        # tracebacks may quote goal files and commands: the log is as private as they are, and a symlink
        # planted in its place is not written through
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8", errors="replace") as fh:
            fh.write(f"--- {datetime.now(UTC).isoformat(timespec='seconds')} {where} pid={os.getpid()}\n{text.rstrip()}\n")
    except (OSError, GoalConvergenceError):
        return None  # logging must never be the thing that breaks a hook
    return path
