"""One writer of money per goal: whatever makes iterations charges under the goal's lock, and a Stop hook for a goal
a live `goal run` holds runs no iteration of its own (issue 27, part A). The short form of the race in
tests/stress/money.py; the long form is tests/stress/test_money.py."""

from __future__ import annotations

import os

from goal_convergence.models import Goal
from tests.stress import money


def test_billed_equals_charged_with_attempts_and_racing_stop_hooks(git_repo, gc_home, fake_api, tmp_path):
    got = money.run(git_repo, fake_api, tmp_path, attempts=3, iterations=4, hooks=4)
    assert got.calls >= got.iterations > 0
    assert got.deferred >= 1  # a hook that fired while the run held the goal said so and judged nothing
    assert abs(got.oracle_billed - got.oracle_charged) < 1e-9, got
    assert abs(got.maker_billed - got.maker_charged) < 1e-9, got


def test_a_goal_run_waits_for_the_stop_hook_that_holds_the_goal(git_repo, gc_home, monkeypatch):
    from datetime import UTC, datetime

    from goal_convergence.goals import creation, specs
    from goal_convergence.loop import claim
    from goal_convergence.storage.store import Store
    from tests.cli.test_run import goal_process

    monkeypatch.chdir(git_repo)
    made = creation.new_goal(Store(), specs.GoalSpec(objective="one writer", project=git_repo, checks=["false"],
                                                     oracle_provider="conditions", session_id="s-held"))
    claim.take(Store(), made.goal_id, datetime.now(UTC), by="the Stop hook of session s-held")
    ran = goal_process("run", made.goal_id, "--maker-cmd", "true", env=dict(os.environ), cwd=git_repo)
    assert ran.returncode != 0 and "already being run by the Stop hook of session s-held" in ran.stderr, ran.stderr
    assert Store().load(Goal, made.goal_id).spent.iterations == 0
