"""`goal hook ...` as Claude Code runs it: SessionEnd's work survives the hook being killed, as Claude Code
kills SessionEnd hooks after about 1.5 s. Real processes, a real goal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from goal_convergence import goals
from goal_convergence.models import Goal
from goal_convergence.store import Store


def _children(pid: int) -> list[int]:
    """The children of ``pid`` that have started their program (so they are in their own session by now)."""
    try:
        found = [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        return [c for c in found if b"goal_convergence" in Path(f"/proc/{c}/cmdline").read_bytes()]
    except OSError:
        return []


def test_session_end_finishes_detaching_after_the_hook_is_killed(git_repo):
    spec = goals.GoalSpec(objective="create fixed.txt", project=git_repo, checks=["true"], oracle_provider="conditions",
                          session_id="s-1")
    goal = goals.new_goal(Store(), spec)
    assert goal.active_since is not None
    hook = subprocess.Popen([sys.executable, "-m", "goal_convergence", "hook", "session-end"], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    hook.stdin.write(json.dumps({"session_id": "s-1", "cwd": str(git_repo), "reason": "other"}).encode())
    hook.stdin.close()
    deadline = time.monotonic() + 60
    while not _children(hook.pid) and hook.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert _children(hook.pid), "the hook did its work in its own process, not in a child it could be cut from"
    os.killpg(hook.pid, signal.SIGKILL)  # what Claude Code does to a SessionEnd hook past its budget
    hook.wait()
    while Store().load(Goal, goal.goal_id).active_since is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    ended = Store().load(Goal, goal.goal_id)
    assert (ended.state, ended.session_id, ended.active_since) == ("active", "s-1", None)
    assert ended.spent.active_seconds > 0
