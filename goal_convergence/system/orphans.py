"""Whose process is it: a process named by pid and start time (so a reused pid is told apart), and
the reaping of the process groups a killed `goal run` left behind.

Children run in process groups of their own (process.py), and on Linux the kernel kills each one
when its parent dies (PR_SET_PDEATHSIG); their own children, such as a test runner's workers or the
program a shell forked (dash forks even for ``sh -c 'python x.py'``), are not covered by that. So
`goal run` keeps a watchdog (``watchdog``): a small process told the live groups at every change, which
kills what is left of them the moment the run dies, however it dies (a kill -9 closes the pipe it
reads). In case the watchdog is gone too, the run also records the groups (claim.py), and whoever finds
that run dead later kills what is left in them. A group is
killed only if it still has a member of ours that started no earlier than the child that made it:
a group id cannot be reused while any member lives, and a later group with the same id would have
started after it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

_PROC = Path("/proc")
HELPERS: set[int] = set()  # our own helper processes (the watchdogs): never a maker's stray


@dataclass(frozen=True)
class Stat:
    """What /proc/PID/stat says about a process, as far as we need it."""

    state: str
    ppid: int
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
    return Stat(fields[0].decode(), int(fields[1]), int(fields[2]), int(fields[19]))


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


def strays(root: int, kept: set[int], since: int) -> list[int]:
    """The live processes below ``root`` that started at ``since`` (clock ticks since boot) or later, outside the
    process groups ``kept`` and not below a process in them. What started earlier is not followed: it is not the
    work of what ran since."""
    below: dict[int, list[tuple[int, Stat]]] = {}
    for entry in _PROC.iterdir() if _PROC.is_dir() else ():
        found = stat(int(entry.name)) if entry.name.isdigit() else None
        if found is not None and found.state not in ("Z", "X"):
            below.setdefault(found.ppid, []).append((int(entry.name), found))
    out: list[int] = []
    todo = [root]
    while todo:
        for pid, found in below.get(todo.pop(), ()):
            if found.pgid not in kept and found.started >= since:
                out.append(pid)
                todo.append(pid)
    return out


@contextlib.contextmanager
def watchdog() -> Iterator[Callable[[Iterable[tuple[int, int | None]]], None]]:
    """For the length of the block, a watchdog process, and the function that tells it the live groups. It
    outlives us only to reap them: when we end normally it is told none and exits at once."""
    try:
        # Its own session, out of reach of a Ctrl-C or a kill of our group; started in / so that no module
        # of the user's project can shadow one it imports.
        dog = subprocess.Popen([sys.executable, "-m", __name__], cwd="/", stdin=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        yield lambda groups: None  # the record (claim.py) and the next run still reap them
        return

    HELPERS.add(dog.pid)

    def tell(groups: Iterable[tuple[int, int | None]]) -> None:
        try:
            dog.stdin.write(json.dumps(list(groups)).encode() + b"\n")  # type: ignore[union-attr]
            dog.stdin.flush()  # type: ignore[union-attr]
        except (OSError, ValueError):  # it died: the record still covers them
            pass

    try:
        yield tell
    finally:
        # Ended, not killed: what is still live is not ours to reap (another run in this process, whose children
        # every watcher is told of, has a watchdog of its own).
        tell([])
        with contextlib.suppress(OSError):
            dog.stdin.close()  # type: ignore[union-attr]
        with contextlib.suppress(subprocess.TimeoutExpired):
            dog.wait(5)
        HELPERS.discard(dog.pid)


def _watch() -> None:
    groups: list = []
    for line in sys.stdin.buffer:  # until the writer's end closes: it ended or it was killed
        with contextlib.suppress(ValueError):
            groups = json.loads(line)
    reap((pgid, started) for pgid, started in groups)


if __name__ == "__main__":
    _watch()
