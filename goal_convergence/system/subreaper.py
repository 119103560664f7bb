"""A maker's turn ends with its whole process tree.

process.py ends a child's process group when it is done with it, but a maker can leave a process running
past its turn out of that group's reach: a daemon that calls setsid, or double-forks, is adopted by init once
its parent is gone. Left running, it can change the tree while the checks run, so the tree checked is not the
tree delivered. So `goal run` is a child subreaper while it holds its claim (``subreaping``): an orphan below it
is adopted by the runner instead of by init. After each maker's turn (``ending_strays``), every process below
the runner that started during the turn is killed, unless a child the runner runs on purpose runs it in its
group (process.py: a condition, a judge, or another attempt's maker, `goal run --attempts`) or it is one of our
own helpers (orphans.HELPERS), before the checks look at the tree.

PR_SET_CHILD_SUBREAPER is Linux's; elsewhere ``subreaping`` does nothing, and a daemon that left the tree stays
out of reach (what is still below the runner is killed all the same, where /proc tells it). Standard library
only.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator

from . import orphans, process

_PR_SET_CHILD_SUBREAPER = 36
_ROUNDS = 5  # a stray may fork between the look and the kill: look again, this many times at most
_GONE_SECONDS = 1.0  # how long a killed process may take to die

_depth = 0  # nested claims in one process (a heartbeat runs its goals one after another, tests run several)
_depth_lock = threading.Lock()


def _set(on: bool) -> None:
    if process.PRCTL is not None:
        process.PRCTL(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)


@contextlib.contextmanager
def subreaping() -> Iterator[None]:
    """For the block, this process adopts the orphans below it (Linux; a no-op elsewhere)."""
    global _depth
    with _depth_lock:
        _depth += 1
        if _depth == 1:
            _set(True)
    try:
        yield
    finally:
        with _depth_lock:
            _depth -= 1
            if _depth == 0:
                _set(False)


def ticks() -> int | None:
    """The start time (/proc/PID/stat, clock ticks since boot) a process started now has; None without a clock
    since boot (not Linux)."""
    clock = getattr(time, "CLOCK_BOOTTIME", None)
    return None if clock is None else int(time.clock_gettime(clock) * os.sysconf("SC_CLK_TCK"))


@contextlib.contextmanager
def ending_strays() -> Iterator[None]:
    """Run a maker's turn in the block; then kill what it left running (``end_strays``)."""
    began = ticks()
    try:
        yield
    finally:
        if began is not None:
            end_strays(began)


def end_strays(since: int) -> list[int]:
    """Kill every process below this one that started at ``since`` or later and that no live child of ours runs
    in its group; the pids killed, once they are gone."""
    me, killed = os.getpid(), []
    for _ in range(_ROUNDS):
        with process.held() as kept:  # no child of ours starts between the look and the kill
            found = orphans.strays(me, kept | orphans.HELPERS, since)
            for pid in found:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        if not found:
            break
        killed += found
        _await_gone(found)
    for pid in killed:  # those adopted are our children now: their exit status is ours to collect
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)
    return killed


def _await_gone(pids: list[int]) -> None:
    deadline = time.monotonic() + _GONE_SECONDS
    while any(orphans.alive(pid, None) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.01)
