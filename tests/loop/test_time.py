"""Time that cannot lie (issue 27, part A): active time on the monotonic clock, claims judged live by their own
heartbeat counter, whatever the wall clocks say. Each process here runs under tests/skewclock.py, whose wall
clock is off or steps while the monotonic clock runs on, as the kernel's does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import pytest

from goal_convergence.goals import creation, specs
from goal_convergence.models import Goal
from goal_convergence.storage import cost
from goal_convergence.storage.store import Store
from tests.agents.claude_code.test_hooks import run_hook
from tests.conftest import REPO, wait_until

SKEWED = [sys.executable, str(REPO / "tests" / "skewclock.py")]
HOURS_3 = str(3 * 3600)
MAKER = "claude-sonnet-5"


def _goal(project, **spec) -> str:
    options = dict(objective="time", project=project, checks=["false"], oracle_provider="conditions",
                   max_iterations=2, stuck_after=100, max_dollars=None)
    return creation.new_goal(Store(), specs.GoalSpec(**{**options, **spec})).goal_id


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), **extra}


def _stepped_run(project, tmp_path, step: str) -> Goal:
    """`goal run` of a one-iteration goal whose wall clock steps by ``step`` s as its maker starts (6 s of work)."""
    gid = _goal(project, max_duration="1h", max_iterations=1)
    mark = tmp_path / "stepped"
    run = subprocess.run([*SKEWED, "run", gid, "--maker-cmd", f"touch {mark}; sleep 6"], cwd=project,
                         capture_output=True, text=True, timeout=300, env=_env(STEP_WHEN=str(mark), STEP_SECONDS=step))
    goal = Store().load(Goal, gid)
    assert goal.stop_reason == "ceiling" and run.returncode == 4, run.stdout + run.stderr
    return goal


def test_a_wall_clock_step_forward_during_an_iteration_is_not_charged(git_repo, gc_home, tmp_path):
    goal = _stepped_run(git_repo, tmp_path, HOURS_3)
    assert 6 <= goal.spent.active_seconds < 600, goal.spent


def test_a_wall_clock_step_back_during_an_iteration_still_charges_the_time(git_repo, gc_home, tmp_path):
    goal = _stepped_run(git_repo, tmp_path, "-" + HOURS_3)
    assert goal.spent.active_seconds >= 6, goal.spent  # the maker's 6 s at least, not lost to the step


def test_a_second_host_whose_clock_is_ahead_does_not_take_a_live_claim(git_repo, gc_home):
    gid = _goal(git_repo, max_iterations=1)
    # The first run's maker works until the test lets it go (after the second run is done), at most a minute:
    # its claim is live all along, without the test waiting out a fixed sleep.
    release = git_repo.parent / "release"
    first = subprocess.Popen([sys.executable, "-m", "goal_convergence", "run", gid, "--maker-cmd",
                              f"for i in $(seq 1200); do [ -e {release} ] && break; sleep 0.05; done; "
                              "touch first.txt"], cwd=git_repo, env=_env(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: first.poll() is not None or Store().load(Goal, gid).runner is not None, "the first claim")
        start = time.monotonic()
        second = subprocess.run([*SKEWED, "run", gid, "--maker-cmd", "touch second.txt"], cwd=git_repo,
                                capture_output=True, text=True, timeout=120,
                                env=_env(SKEW_SECONDS="45", FAKE_HOST="another-host"))
        took = time.monotonic() - start
        release.touch()
        out, err = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
    assert second.returncode != 0 and "already being run by `goal run`" in second.stderr, second.stdout + second.stderr
    assert not (git_repo / "second.txt").exists()  # its maker never ran
    assert first.returncode == 4 and (git_repo / "first.txt").exists(), out + err
    assert Store().load(Goal, gid).spent.iterations == 1
    assert took < 30, f"the live claim was told from a still one only after {took:.0f} s"


def _assistant(n: int, stamp: str) -> str:
    return json.dumps({"type": "assistant", "timestamp": stamp, "sessionId": "s-ahead", "message": {
        "id": f"msg_t{n:03d}", "model": MAKER, "role": "assistant", "content": [{"type": "text", "text": "ok"}],
        "usage": {"input_tokens": 1000 + n, "output_tokens": 100 + n}}}) + "\n"


def test_a_goal_made_while_the_clock_was_an_hour_ahead_still_charges_the_sessions_spend(git_repo, gc_home,
                                                                                        tmp_path):
    (git_repo / "check.py").write_text("import sys\nsys.exit(1)\n")
    transcript = tmp_path / "s-ahead.jsonl"
    earlier = (datetime.now(UTC) - timedelta(minutes=10)).isoformat().replace("+00:00", "Z")
    transcript.write_text(_assistant(0, earlier) + _assistant(1, earlier))  # before the goal: not its spend
    payload = {"session_id": "s-ahead", "transcript_path": str(transcript), "cwd": str(git_repo),
               "hook_event_name": "UserPromptExpansion", "expansion_type": "slash_command",
               "command_name": "goal-convergence:goal", "command_source": "plugin",
               "command_args": "make check.py pass --check 'python3 check.py' --oracle conditions"}
    run_hook("prompt-expansion", payload, cmd=[*SKEWED, "hook", "prompt-expansion"], env=_env(SKEW_SECONDS="3600"))
    [goal] = Store().iter_all(Goal)
    assert goal.session_id == "s-ahead"
    now = datetime.now(UTC).isoformat().replace("+00:00", "Z")  # the clock set right: an hour before activeSince
    with transcript.open("a") as out:
        out.write("".join(_assistant(n, now) for n in (2, 3, 4)))
    run_hook("stop", {**payload, "hook_event_name": "Stop", "stop_hook_active": False,
                      "last_assistant_message": "done"}, env=_env())
    # the newest message is held back by a Stop's read (transcript.py): the next read charges it
    spent = sum(cost.usage_cost(MAKER, json.loads(_assistant(n, now))["message"]["usage"]) for n in (2, 3))
    assert Store().load(Goal, goal.goal_id).spent.maker_dollars == pytest.approx(spent, abs=1e-12)


def test_a_goal_bound_from_a_shell_while_the_clock_was_ahead_still_charges_the_sessions_spend(git_repo, gc_home,
                                                                                             tmp_path):
    # `goal new --session` has no transcript to mark: its first read goes by time, which must allow for the step
    (git_repo / "check.py").write_text("import sys\nsys.exit(1)\n")
    transcript = tmp_path / "s-ahead.jsonl"
    earlier = (datetime.now(UTC) - timedelta(minutes=10)).isoformat().replace("+00:00", "Z")
    transcript.write_text(_assistant(0, earlier))  # before the goal: not its spend
    made = subprocess.run([*SKEWED, "new", "make check.py pass", "--check", "python3 check.py", "--oracle",
                           "conditions", "--session", "s-ahead", "--json"], cwd=git_repo, capture_output=True,
                          text=True, timeout=120, env=_env(SKEW_SECONDS="3600"))
    assert made.returncode == 0, made.stderr
    gid = json.loads(made.stdout)["goalId"]
    now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    with transcript.open("a") as out:
        out.write("".join(_assistant(n, now) for n in (1, 2, 3)))
    run_hook("stop", {"session_id": "s-ahead", "transcript_path": str(transcript), "cwd": str(git_repo),
                      "hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": "done"},
             env=_env())
    spent = sum(cost.usage_cost(MAKER, json.loads(_assistant(n, now))["message"]["usage"]) for n in (1, 2))
    assert Store().load(Goal, gid).spent.maker_dollars == pytest.approx(spent, abs=1e-12)
