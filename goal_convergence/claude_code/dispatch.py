"""`goal hook session-start|stop|session-end|prompt-expansion`, Claude Code's hook JSON on stdin.

The fast path answers first; the slow path (hooks.py, with pydantic and the whole loop) is
imported only when it finds work. A hook never breaks the session it runs in: any failure is
logged and reported in one line (``systemMessage``), and the exit code is always 0.

Claude Code gives all SessionEnd hooks together about 1.5 s and kills what runs longer, whatever
the hook's own timeout says; the slow path alone can take that long on a loaded machine. So
SessionEnd's work (charging the transcript and stopping the goal's clock, engine.record_maker)
runs in a child in its own session, which that cut does not reach, and the hook waits for it, so
a caller that waits sees its result.
"""

from __future__ import annotations

import json
import os
import sys

from . import fast

# Set on the child that does SessionEnd's work, so that it does the work instead of starting another.
DETACHED = "GOAL_CONVERGENCE_SESSION_END_CHILD"


def main(argv: list[str]) -> int:
    event = argv[0] if len(argv) == 1 else None
    if event not in fast.EVENTS:
        _emit({"systemMessage": f"goal-convergence: unknown hook {' '.join(argv)!r}; expected one of "
                                f"{', '.join(fast.EVENTS)}"})
        return 0
    try:
        data = sys.stdin.buffer.read()
        # popped: the checks and the oracle this hook runs may start hooks of their own
        ran = os.environ.pop(fast.RAN, None) == "1"
        answer = None if ran else fast.answer(event, data)
        if answer is None and event == "session-end" and os.environ.pop(DETACHED, None) != "1":
            answer = _out_of_reach(event, data)
        if answer is None:
            answer = _slow(event, data)
    except BaseException as exc:  # noqa: BLE001 - whatever it is, the user's session carries on
        answer = {"systemMessage": fast.failure_line(event, exc)}
    _emit(answer)
    return 0


def _slow(event: str, data: bytes) -> dict[str, object]:
    """Run the slow path with stdout pointed at stderr: Claude Code reads the hook's stdout as its
    answer, and nothing that a check or a library prints may end up in it."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        from . import hooks  # pydantic and the loop: only when there is work

        return hooks.run(event, data)
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _out_of_reach(event: str, data: bytes) -> dict[str, object]:
    """The slow path in a child of its own session: killing this hook does not stop it halfway."""
    import subprocess
    import tempfile

    env = {**os.environ, DETACHED: "1", fast.RAN: "1"}
    # The input is in a file, not a pipe this process feeds, and stderr goes nowhere: either may be
    # gone before the child is done (its failures go to the log).
    with tempfile.TemporaryFile() as given:
        given.write(data)
        given.seek(0)
        child = subprocess.Popen([sys.executable, "-m", "goal_convergence", "hook", event], stdin=given,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    out, _ = child.communicate()
    return json.loads(out) if out.strip() else {}


def _emit(answer: dict[str, object]) -> None:
    if answer:
        sys.stdout.write(json.dumps(answer, ensure_ascii=False) + "\n")
        sys.stdout.flush()
