"""Which processes are a maker at work, so that what a maker runs can be told from what a person runs.

A maker works with the user's account and a shell, so it can run the `goal` CLI as a person would, and
point it at its own goal. While a maker works, the process that runs it (a headless `goal run`, or the
Claude Code session that owns an active goal) is recorded under the home, as ``makers/PID-START`` holding
the goal's id; any process with a recorded process among its ancestors is inside that maker, whatever
its environment says. The start time tells a reused pid apart, so a stale record never matches.

Makers started by `goal run` also get ``GOAL_CONVERGENCE_MAKER`` in their environment, for what leaves
the tree (a daemon that double-forks away from a Claude Code session, whose parent is then init). A
maker can drop that variable; the seal (storage) is what catches an edit made from outside the tree.
Standard library only: the hooks' fast path records Claude Code sessions.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from . import files, orphans

MAKERS = "makers"
ENV = "GOAL_CONVERGENCE_MAKER"
MAX_DEPTH = 64  # ancestors walked: far more than any real chain of shells and runners


def _name(pid: int, started: int) -> str:
    return f"{pid}-{started}"


def register(home: Path, pid: int, goal_id: str) -> Path | None:
    """Record ``pid`` as running a maker of ``goal_id``; None when the process is gone (or no /proc)."""
    started = orphans.started(pid)
    if started is None:
        return None
    path = files.folder(Path(home), MAKERS) / _name(pid, started)
    try:
        if path.read_text() == goal_id:
            return path
    except OSError:
        pass
    _sweep(path.parent)
    files.write_atomic(path, goal_id.encode())
    return path


def unregister(path: Path | None) -> None:
    if path is not None:
        with contextlib.suppress(OSError):
            path.unlink()


@contextlib.contextmanager
def working(home: Path, goal_id: str, pid: int | None = None) -> Iterator[Path | None]:
    """Record this process (or ``pid``) as a maker of ``goal_id`` while the block runs."""
    path = register(home, pid or os.getpid(), goal_id)
    try:
        yield path
    finally:
        unregister(path)


def _sweep(folder: Path) -> None:
    """Drop the records of processes that are gone, so the folder stays as small as the live makers."""
    for entry in os.scandir(folder):
        pid, _, started = entry.name.partition("-")
        if pid.isdigit() and started.isdigit() and not orphans.alive(int(pid), int(started)):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)


def ancestors(pid: int | None = None) -> Iterator[tuple[int, int]]:
    """(pid, start time) of each ancestor of ``pid`` (default: this process), parent first."""
    found = orphans.stat(pid or os.getpid())
    for _ in range(MAX_DEPTH):
        if found is None or found.ppid <= 1:
            return
        parent = found.ppid
        found = orphans.stat(parent)
        if found is not None:
            yield parent, found.started


def inside(home: Path, pid: int | None = None) -> str | None:
    """The goal id whose maker this process (or ``pid``) is part of, None when it is no maker's.
    A maker's environment variable counts too, with an empty value as "some goal" ("?")."""
    folder = Path(home) / MAKERS
    if folder.is_dir():
        for parent, started in ancestors(pid):
            try:
                return (folder / _name(parent, started)).read_text() or "?"
            except OSError:
                continue
    marked = os.environ.get(ENV) if pid is None else None
    return None if marked is None else marked or "?"
