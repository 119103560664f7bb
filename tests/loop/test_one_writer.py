"""One writer of money per goal: whatever makes iterations charges under the goal's lock, and a Stop hook for a goal
a live `goal run` holds runs no iteration of its own (issue 27, part A). The short form of the race in
tests/stress/money.py; the long form is tests/stress/test_money.py."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from goal_convergence.models import Goal
from tests.conftest import wait_until
from tests.stress import money


def test_billed_equals_charged_with_attempts_and_racing_stop_hooks(git_repo, gc_home, fake_api, tmp_path):
    got = money.run(git_repo, fake_api, tmp_path, attempts=3, iterations=4, hooks=4)
    assert got.calls >= got.iterations > 0
    assert got.deferred >= 1  # a hook that fired while the run held the goal said so and judged nothing
    assert abs(got.oracle_billed - got.oracle_charged) < 1e-9, got
    assert abs(got.maker_billed - got.maker_charged) < 1e-9, got


def test_a_goal_run_waits_for_the_iteration_a_stop_hook_is_making(git_repo, gc_home):
    from goal_convergence.goals import creation, specs
    from goal_convergence.loop import claim
    from goal_convergence.storage.store import Store
    from tests.conftest import REPO

    made = creation.new_goal(Store(), specs.GoalSpec(objective="one writer", project=git_repo, checks=["false"],
                                                     oracle_provider="conditions", max_iterations=1))
    started = git_repo / "started.txt"
    with claim.writing(Store(), made.goal_id):  # as a Stop hook holds it for its iteration
        run = subprocess.Popen([sys.executable, "-m", "goal_convergence", "run", made.goal_id, "--maker-cmd",
                                f"touch {started}"], cwd=git_repo, env={**os.environ, "PYTHONPATH": str(REPO)},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_until(lambda: Store().load(Goal, made.goal_id).runner is not None, "the run's claim")
        time.sleep(3)
        assert not started.exists() and run.poll() is None  # its maker waits for the hook's iteration to end
    out, err = run.communicate(timeout=120)
    assert run.returncode == 4 and started.exists(), out + err
