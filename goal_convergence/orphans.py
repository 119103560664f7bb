"""Whose process is it: a process named by pid and start time (so a reused pid is told apart), and
the reaping of the process groups a killed `goal run` left behind.

Children run in process groups of their own (process.py), and on Linux the kernel kills each one
when its parent dies (PR_SET_PDEATHSIG); their own children, such as a test runner's workers or a
shell's ``sleep``, are not covered by that. So `goal run` records the group of every live child
(runner.py), and whoever finds that run dead later kills what is left in those groups. A group is
killed only if it still has a member of ours that started no earlier than the child that made it:
a group id cannot be reused while any member lives, and a later group with the same id would have
started after it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

_PROC = Path("/proc")


@dataclass(frozen=True)
class Stat:
    """What /proc/PID/stat says about a process, as far as we need it."""

    state: str
    pgid: int
    started: int  # clock ticks since boot


def stat(pid: int) -> Stat | None:
    """The process ``pid``, or None when there is none (or no /proc to ask)."""
    try:
        raw = (_PROC / str(pid) / "stat").read_bytes()
    except (OSError, ValueError):
        return None
    # The command name (field 2) may hold spaces and parentheses: the fields after it start after the last ")".
    fields = raw[raw.rindex(b")") + 2:].split()
    return Stat(fields[0].decode(), int(fields[2]), int(fields[19]))


def started(pid: int) -> int | None:
    found = stat(pid)
    return found.started if found else None


@cache
def host() -> str:
    return socket.gethostname()


def me() -> tuple[int, str, int | None]:
    """This process: (pid, host, start time). Not cached: a forked child is another process."""
    pid = os.getpid()
    return pid, host(), started(pid)


def alive(pid: int, start: int | None) -> bool:
    """Whether the process ``pid`` that started at ``start`` still runs (a zombie does not)."""
    if _PROC.is_dir():
        found = stat(pid)
        return found is not None and found.state not in ("Z", "X") and (start is None or found.started == start)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _members(groups: dict[int, int | None]) -> set[int]:
    """The group ids among ``groups`` that still have a member of ours started no earlier than its leader."""
    found: set[int] = set()
    uid = os.getuid()
    for entry in _PROC.iterdir() if _PROC.is_dir() else ():
        if not entry.name.isdigit():
            continue
        proc = stat(int(entry.name))
        if proc is None or proc.pgid not in groups or proc.state in ("Z", "X"):
            continue
        leader_start = groups[proc.pgid]
        with contextlib.suppress(OSError):
            if entry.stat().st_uid == uid and (leader_start is None or proc.started >= leader_start):
                found.add(proc.pgid)
    return found


def reap(groups: Iterable[tuple[int, int | None]]) -> list[int]:
    """SIGKILL each group (pgid, its leader's start time) that still has members of ours; the ids killed."""
    wanted = dict(groups)
    killed = []
    for pgid in sorted(_members(wanted)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
            killed.append(pgid)
    return killed
