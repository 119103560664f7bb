"""Deadlines for whole calls, and the budget of a whole process.

A timeout handed to an HTTP client bounds each wait (a connect, a read) and not the call: a server
that sends its headers and then a byte every half second keeps a read timeout from ever firing, and
retries multiply what is left. So a call that must end in time runs in a thread of its own and is
waited for until its deadline (``within``); past it the caller gets ``Late`` at once, and the call,
told through its ``Deadline``, stops at its next step.

A process may also have a budget for everything it does (the Stop hook: Claude Code kills a hook
that outlives its timeout, and a killed hook decides nothing). ``start`` sets it from the monotonic
clock, and every child process (process.py) and network call shortens its own timeout to what is
left of it (``bounded``). Standard library only: the hooks' fast path may import it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

_budget_ends: float | None = None


class Late(Exception):
    """A call did not end by its deadline."""


def start(seconds: float) -> None:
    """Give this process ``seconds`` in all, from now, for every call bounded by ``bounded``."""
    global _budget_ends
    _budget_ends = time.monotonic() + seconds


def left() -> float | None:
    """The seconds left of this process's budget (never below zero), None without one."""
    return None if _budget_ends is None else max(0.0, _budget_ends - time.monotonic())


def bounded(timeout: float | None) -> float | None:
    """``timeout`` shortened to what is left of the process's budget."""
    rest = left()
    if rest is None:
        return timeout
    return rest if timeout is None else min(timeout, rest)


class Deadline:
    """A point on the monotonic clock a call must end by; the call asks ``passed`` between its steps."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.ends = time.monotonic() + seconds
        self.gave_up = threading.Event()

    def left(self) -> float:
        return max(0.0, self.ends - time.monotonic())

    @property
    def passed(self) -> bool:
        return self.gave_up.is_set() or time.monotonic() >= self.ends


def within(deadline: Deadline, call: Callable[[], T], *, cut: Callable[[], object] | None = None) -> T:
    """``call()``'s result or exception, or ``Late`` once ``deadline`` passes. A late call is left to
    end in its daemon thread: ``deadline.passed`` tells it to stop, and ``cut`` (say, closing its
    connections) is asked to hurry it."""
    if deadline.left() <= 0:  # nothing left: a call started now would be paid for and never waited for
        raise Late(f"no time left of {deadline.seconds:g} s")
    done: dict[str, object] = {}

    def run() -> None:
        try:
            done["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread as it is
            done["error"] = exc

    thread = threading.Thread(target=run, name="call with a deadline", daemon=True)
    thread.start()
    thread.join(deadline.left())
    if thread.is_alive():
        deadline.gave_up.set()
        if cut is not None:  # in a thread too: closing a connection may wait for the read it would end
            threading.Thread(target=_quietly, args=(cut,), name="cut a late call", daemon=True).start()
        raise Late(f"no answer within {deadline.seconds:g} s")
    if "error" in done:
        raise done["error"]  # type: ignore[misc]
    return done["value"]  # type: ignore[return-value]


def _quietly(cut: Callable[[], object]) -> None:
    try:
        cut()
    except Exception:  # noqa: BLE001 - only a way to hurry a call already given up on
        pass
