"""Slow networks and moving clocks met by a real `goal run` (issue 27, part A), at the stress suite's scale.

- slow replies: a judge that drips its reply a byte every half second, waits out each of its retries, redirects
  to another server or sends 10 MB: each call ends within its deadline as a judge error, charged;
- clock steps: the wall clock steps forward and back (hours and days) as each maker starts: the time charged is
  what the makers and checks really took, never the steps, never less than the makers' own time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from goal_convergence.goals import creation, specs
from goal_convergence.models import Goal
from goal_convergence.storage.store import Store
from tests.conftest import REPO
from tests.fakeapi import FAST_RETRY, FakeAPI, Raw, delay, drip, error, redirect, text

from .invariants import Lost
from .report import assert_clean
from .scale import sized

pytestmark = pytest.mark.stress

VERDICT = json.dumps({"converged": True, "reasons": ["looks done"], "nextHint": "", "confidence": 0.9})
BIG = json.dumps({"id": "msg_big", "type": "message", "role": "assistant", "model": "claude-haiku-5-5",
                  "content": [{"type": "text", "text": "x" * (10 << 20)}], "stop_reason": "end_turn",
                  "usage": {"input_tokens": 10, "output_tokens": 10}}).encode()
TIMEOUT = 3
SLACK = 10  # how much slower than the same run with a judge that fails at once a loaded machine may be


def _goal(project, **spec) -> str:
    options = dict(objective="stress", project=project, checks=["true"], max_iterations=1, stuck_after=100,
                   max_dollars=None)
    return creation.new_goal(Store(), specs.GoalSpec(**{**options, **spec})).goal_id


def test_slow_replies_end_within_the_deadline_of_the_whole_call(git_repo, gc_home, fake_api, tally):
    row = tally("slow replies: drip, retries, redirect, 10 MB")
    other = FakeAPI()
    other.set_responder(lambda body: text(VERDICT))
    faults = {"at once": lambda body: error(400, "invalid_request_error"),  # the yardstick for the others
              "drip": lambda body: drip(text(VERDICT), every=0.5),
              "slow retries": lambda body: delay(2, error(529, "overloaded_error", headers=FAST_RETRY)),
              "redirect": lambda body: redirect(other.url),
              "10 MB reply": lambda body: Raw(BIG)}
    env = {**os.environ, "PYTHONPATH": str(REPO), "ANTHROPIC_BASE_URL": fake_api.url, "ANTHROPIC_API_KEY": "x",
           "GOAL_CONVERGENCE_ORACLE_TIMEOUT": str(TIMEOUT), "GOAL_CONVERGENCE_ORACLE_RETRIES": "3"}
    try:
        for _ in range(sized(3, 1)):
            yardstick = 0.0
            for name, fault in faults.items():
                with row.attempt(name):
                    fake_api.set_responder(fault)
                    gid = _goal(git_repo, oracle_provider="anthropic", oracle_model="claude-haiku-5-5")
                    start = time.monotonic()
                    run = subprocess.run([sys.executable, "-m", "goal_convergence", "run", gid, "--maker-cmd", "true"],
                                         cwd=git_repo, env=env, capture_output=True, text=True, timeout=600)
                    took = time.monotonic() - start
                    yardstick = yardstick or took
                    goal = Store().load(Goal, gid)
                    assert run.returncode == 4 and goal.state == "escalated", run.stdout + run.stderr
                    assert goal.history[-1].judge_error and goal.history[-1].verdict is None, goal.history[-1]
                    assert took < yardstick + TIMEOUT + SLACK, (f"{name}: the run took {took:.0f} s, {yardstick:.0f} s "
                                                                f"with a judge failing at once ({TIMEOUT} s deadline)")
                    if other.messages:
                        raise Lost(f"{name}: the server a redirect named was asked")
    finally:
        other.close()
    assert_clean(row)


def test_wall_clock_steps_are_neither_charged_nor_lost(git_repo, gc_home, tmp_path, tally):
    row = tally("wall-clock steps during iterations")
    steps = [3 * 3600, -3 * 3600, 86400, -86400 - 3600, 45, -45]
    for n in range(sized(2, 1)):
        with row.attempt(f"run {n}"):
            iterations = len(steps)
            gid = _goal(git_repo, checks=["false"], oracle_provider="conditions", max_iterations=iterations,
                        max_duration="1h")
            mark = tmp_path / f"stepped-{n}"
            start = time.monotonic()
            run = subprocess.run([sys.executable, str(REPO / "tests" / "skewclock.py"), "run", gid, "--maker-cmd",
                                  f"touch {mark}; sleep 1"], cwd=git_repo, capture_output=True, text=True, timeout=600,
                                 env={**os.environ, "PYTHONPATH": str(REPO), "STEP_WHEN": str(mark),
                                      "STEP_SECONDS": ",".join(map(str, steps))})
            took = time.monotonic() - start
            goal = Store().load(Goal, gid)
            assert run.returncode == 4 and goal.stop_reason == "ceiling", run.stdout + run.stderr
            if not iterations * 1 <= goal.spent.active_seconds <= took:
                raise Lost(f"{goal.spent.active_seconds:.1f} s charged for {iterations} makers of 1 s in a run of "
                           f"{took:.1f} s")
    assert_clean(row)
