"""`goal hook session-start|stop|session-end|prompt-expansion|pre-tool-use`, Claude Code's hook JSON on stdin.

The fast path answers first; the slow path (hooks.py, with pydantic and the whole loop) is
imported only when it finds work (PreToolUse never needs it: pretool.py). A hook never breaks the
session it runs in: any failure is logged and reported in one line (``systemMessage``), and the exit
code is always 0, so a failed PreToolUse lets the tool call through.

Claude Code gives all SessionEnd hooks together about 1.5 s and kills what runs longer, whatever
the hook's own timeout says; the slow path alone can take that long on a loaded machine. So
SessionEnd's work (charging the transcript and stopping the goal's clock, engine.record_maker)
is handed to a child in its own session, which that cut does not reach, and the hook returns at
once: its answer cannot say anything the session would still show, and the child's failures go
to the log.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ...system import index
from . import fast

# Set on the child that does SessionEnd's work, so that it does the work instead of starting another.
DETACHED = "GOAL_CONVERGENCE_SESSION_END_CHILD"
# How long a hook waits for its session's SessionEnd child (SessionStart's own timeout is 30 s).
SETTLE_SECONDS = 20.0


def main(argv: list[str]) -> int:
    return serve(argv, fast.EVENTS, "", _answer, lambda event, exc: {"systemMessage": fast.failure_line(event, exc)},
                 _emit)


def serve(argv: list[str], events: Collection[str], agent: str, answer: Callable[[str, bytes], dict[str, Any]],
          failed: Callable[[str, BaseException], dict[str, Any]], emit: Callable[[dict[str, Any]], None]) -> int:
    """Every agent's `goal hook`: the event ``argv`` names, the ``answer`` to the hook input on stdin, emitted.
    A hook never breaks the session it runs in: a failure is answered by ``failed`` (logged, shown in one
    line), and the exit code is always 0."""
    event = argv[0] if len(argv) == 1 else None
    if event not in events:
        emit({"systemMessage": f"goal-convergence: unknown {agent}hook {' '.join(argv)!r}; expected one of "
                               f"{', '.join(events)}"})
        return 0
    try:
        reply = answer(event, sys.stdin.buffer.read())
    except BaseException as exc:  # noqa: BLE001 - whatever it is, the user's session carries on
        reply = failed(event, exc)
    emit(reply)
    return 0


def _answer(event: str, data: bytes) -> dict[str, Any]:
    # popped: the checks and the oracle this hook runs may start hooks of their own
    ran = os.environ.pop(fast.RAN, None) == "1"
    child = os.environ.pop(DETACHED, None) == "1"
    if event == "pre-tool-use":  # the fast path's alone, even when the launcher's attempt failed
        answer = fast.answer(event, data) or {}
    else:
        answer = None if ran or child else fast.answer(event, data)
    if answer is None and event == "session-end" and not child:
        answer = _out_of_reach(event, data)
    if answer is None:
        if event != "session-end":
            _after_session_end(data)
        answer = _slow(event, data)
    return answer


@contextmanager
def stdout_on_stderr() -> Iterator[None]:
    """Inside, stdout points at stderr: the agent (Claude Code, Codex, Gemini CLI) reads the hook's stdout
    as its answer, and nothing that a check or a library prints may end up in it."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _slow(event: str, data: bytes) -> dict[str, object]:
    with stdout_on_stderr():
        from . import hooks  # pydantic and the loop: only when there is work

        return hooks.run(event, data)


def _out_of_reach(event: str, data: bytes) -> dict[str, object]:
    """The slow path in a child of its own session, not waited for: killing this hook does not stop it
    halfway. The child inherits a shared lock that it holds while it works (``_after_session_end``)."""
    from ...system import files, process

    path = _session_end_lock(data)
    held = None
    if path is not None:
        files.folder(path.parent.parent, "locks")
        held = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        fcntl.flock(held, fcntl.LOCK_SH)
    try:
        process.detached([sys.executable, "-m", "goal_convergence", "hook", event], data, {**os.environ, DETACHED: "1"},
                         keep=held)
    finally:
        if held is not None:
            os.close(held)
    return {}


def _session_end_lock(data: bytes) -> Path | None:
    """The lock file of the session the hook input names, None when it names none that can be a file name."""
    try:
        session_id = json.loads(data).get("session_id")
    except (ValueError, AttributeError, RecursionError):
        return None
    if not isinstance(session_id, str) or not index.SESSION_RE.fullmatch(session_id):
        return None
    return index.home() / "locks" / f"session-end.{session_id}.lock"


def _after_session_end(data: bytes) -> None:
    """Wait, for a while, for the SessionEnd work of this session that a child still does: a session resumed
    at once (`claude --resume`) restarts its goal's clock, which that child would otherwise stop after it."""
    path = _session_end_lock(data)
    try:
        fd = os.open(path, os.O_RDWR) if path is not None else None
    except OSError:
        return  # no SessionEnd of this session ever handed work to a child
    if fd is None:
        return
    try:
        deadline = time.monotonic() + SETTLE_SECONDS
        while time.monotonic() < deadline:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                time.sleep(0.02)
    finally:
        os.close(fd)


def _emit(answer: dict[str, object]) -> None:
    if answer:
        sys.stdout.write(fast.answer_text(answer))
        sys.stdout.flush()
