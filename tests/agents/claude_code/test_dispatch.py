"""`goal hook ...` as Claude Code runs it: SessionEnd hands its work to a child of its own session and
returns at once, and the work lands all the same, as Claude Code kills SessionEnd hooks after about 1.5 s.
Real processes, a real goal."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from goal_convergence.goals import creation, specs
from goal_convergence.models import Goal
from goal_convergence.storage.store import Store
from tests.conftest import REPO, wait_until


def test_session_end_returns_before_its_work_is_done_and_the_work_lands_after_the_hook_is_gone(git_repo):
    spec = specs.GoalSpec(objective="create fixed.txt", project=git_repo, checks=["true"], oracle_provider="conditions",
                          session_id="s-1")
    goal = creation.new_goal(Store(), spec)
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


# The plugin's launcher imports the fast path from the plugin root under `python3 -S` (no site-packages).
FAST = ("import json, sys; sys.path.insert(0, sys.argv[1]); from goal_convergence.agents.claude_code import fast; "
        "print(json.dumps(fast.answer('session-start', sys.stdin.buffer.read()))); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'click', 'anthropic', 'jsonschema', "
        "'filelock') or m.startswith('goal_convergence.models')))")


def test_a_hook_right_after_the_index_went_stale_is_answered_by_the_fast_path(git_repo, gc_home):
    """A goal file written behind the index, and a broken one: the launcher's fast path brings the index
    up to date from the files' JSON alone (the broken one quarantined and reported), with the standard
    library alone, and answers."""
    spec = specs.GoalSpec(objective="create fixed.txt", project=git_repo, checks=["true"], oracle_provider="conditions",
                          session_id="s-owner")
    goal = creation.new_goal(Store(), spec)
    path = Store().path_for(Goal, goal.goal_id)
    path.write_text(path.read_text(encoding="utf-8") + "\n", encoding="utf-8")  # a new stamp: the index is stale
    (gc_home / "goals" / "goal-zzzzzzzz.json").write_text("{ not json")
    payload = {"session_id": "s-new", "cwd": str(git_repo), "hook_event_name": "SessionStart", "source": "startup"}
    done = subprocess.run([sys.executable, "-S", "-c", FAST, str(REPO)], input=json.dumps(payload).encode(),
                          capture_output=True, check=True)
    printed, loaded = done.stdout.decode().splitlines()
    assert loaded == "[]"
    answer = json.loads(printed)
    assert f"- {goal.goal_id} (active in another session)" in answer["hookSpecificOutput"]["additionalContext"]
    assert "moved a broken file aside" in answer["systemMessage"] and "goal-zzzzzzzz.json" in answer["systemMessage"]
    assert "/goal-convergence:triage dismiss" in answer["systemMessage"]  # named as the session has it
    assert list((gc_home / "quarantine").glob("goal-zzzzzzzz.json.*"))
    assert [s["goalId"] for s in Store().summaries()] == [goal.goal_id]
    again = subprocess.run([sys.executable, "-m", "goal_convergence", "hook", "session-start"],
                           input=json.dumps(payload).encode(), capture_output=True, check=True)
    assert "moved a broken file aside" not in again.stdout.decode()  # told once


def test_a_session_resumed_at_once_waits_for_its_session_end_child(git_repo, gc_home):
    """`claude --resume` right after the session ended: its SessionStart restarts the goal's clock only after
    SessionEnd's child has stopped it, never before (the clock would then stay stopped while the session works)."""
    spec = specs.GoalSpec(objective="create fixed.txt", project=git_repo, checks=["true"], oracle_provider="conditions",
                          session_id="s-1")
    goal = creation.new_goal(Store(), spec)
    store = Store()
    payload = {"session_id": "s-1", "cwd": str(git_repo), "reason": "other", "source": "resume"}
    hook = [sys.executable, "-m", "goal_convergence", "hook"]
    with store.lock(store.path_for(Goal, goal.goal_id)):  # SessionEnd's child cannot do its work yet
        ended = subprocess.run([*hook, "session-end"], input=json.dumps(payload).encode(), capture_output=True,
                               timeout=20)
        assert (ended.returncode, ended.stdout) == (0, b"")
        with open(gc_home / "locks" / "session-end.s-1.lock", "rb") as working:  # held by the child while it works
            with pytest.raises(BlockingIOError):
                fcntl.flock(working, fcntl.LOCK_EX | fcntl.LOCK_NB)
        resumed = subprocess.Popen([*hook, "session-start"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        resumed.stdin.write(json.dumps(payload).encode())
        resumed.stdin.close()
        time.sleep(1)  # both wait now: the child for the goal's lock, the resumed session's hook for the child
    assert resumed.wait(timeout=60) == 0
    assert f"{goal.goal_id} continues in this session" in json.loads(resumed.stdout.read())["systemMessage"]
    after = Store().load(Goal, goal.goal_id)
    assert after.active_since is not None and after.spent.active_seconds > 0  # ended, then restarted: in that order
