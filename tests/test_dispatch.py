"""`goal hook ...` as Claude Code runs it: SessionEnd hands its work to a child of its own session and
returns at once, and the work lands all the same, as Claude Code kills SessionEnd hooks after about 1.5 s.
Real processes, a real goal."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys

from goal_convergence import goals
from goal_convergence.models import Goal
from goal_convergence.store import Store
from tests.conftest import wait_until


def test_session_end_returns_before_its_work_is_done_and_the_work_lands_after_the_hook_is_gone(git_repo):
    spec = goals.GoalSpec(objective="create fixed.txt", project=git_repo, checks=["true"], oracle_provider="conditions",
                          session_id="s-1")
    goal = goals.new_goal(Store(), spec)
    store = Store()
    path = store.path_for(Goal, goal.goal_id)
    assert goal.active_since is not None
    with store.lock(path):  # the work needs the goal's lock: held, it cannot be done before the hook returns
        hook = subprocess.Popen([sys.executable, "-m", "goal_convergence", "hook", "session-end"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
        out, err = hook.communicate(json.dumps({"session_id": "s-1", "cwd": str(git_repo), "reason": "other"}).encode(),
                                    timeout=20)
        assert (hook.returncode, out, err) == (0, b"", b"")
        assert json.loads(path.read_text(encoding="utf-8"))["activeSince"] == goal.active_since  # not done yet
        with contextlib.suppress(ProcessLookupError):
            os.killpg(hook.pid, signal.SIGKILL)  # what Claude Code does to a SessionEnd hook past its budget
    wait_until(lambda: Store().load(Goal, goal.goal_id).active_since is None, "SessionEnd's work")
    ended = Store().load(Goal, goal.goal_id)
    assert (ended.state, ended.session_id, ended.active_since) == ("active", "s-1", None)
    assert ended.spent.active_seconds > 0
