"""Lifetime budgets: durations, the active clock, and which limit a goal reaches first."""

from __future__ import annotations

from datetime import timedelta

import pytest

from goal_convergence.errors import InvalidInput
from goal_convergence.models import Budget, Spent, now_iso
from goal_convergence.rules import budget
from tests.fakes import T0


@pytest.mark.parametrize(("text", "seconds"), [("90s", 90), ("30m", 1800), ("2h", 7200), ("1h30m", 5400),
                                               ("1d", 86400), ("0s", 0)])
def test_durations(text, seconds):
    assert budget.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5", "h", "2 h", "1.5h", "-3m", "2x", 90])
def test_a_bad_duration_says_how_to_write_one(text):
    with pytest.raises(InvalidInput, match="write it like 90s, 30m, 2h or 1h30m"):
        budget.parse_duration(text)


def test_accrue_charges_the_time_since_the_clock_started_and_restarts_it(make_goal):
    goal = make_goal(active_since=now_iso(T0))
    budget.accrue(goal, T0 + timedelta(seconds=90))
    assert goal.spent.active_seconds == 90 and goal.active_since == now_iso(T0 + timedelta(seconds=90))
    budget.accrue(goal, T0 + timedelta(seconds=100))
    assert goal.spent.active_seconds == 100


def test_a_stopped_clock_and_a_clock_that_went_back_charge_nothing(make_goal):
    stopped = make_goal()
    budget.accrue(stopped, T0)
    assert stopped.spent.active_seconds == 0 and stopped.active_since is None
    behind = make_goal(active_since=now_iso(T0))
    budget.accrue(behind, T0 - timedelta(seconds=30))
    assert behind.spent.active_seconds == 0


LIMITS = Budget(max_iterations=5, max_duration="1h", max_dollars=2.0, max_tokens=1000)


@pytest.mark.parametrize(("spent", "reason"), [
    (Spent(iterations=4, active_seconds=3599, maker_dollars=1.0, oracle_dollars=0.99, maker_tokens=999), None),
    (Spent(iterations=5), "ceiling"),
    (Spent(active_seconds=3600), "timeout"),
    (Spent(maker_dollars=1.5, oracle_dollars=0.5), "budget-exhausted"),  # maker and oracle together
    (Spent(maker_tokens=600, oracle_tokens=400), "budget-exhausted"),
    # every limit reached: money first, then time, then iterations
    (Spent(iterations=5, active_seconds=3600, oracle_dollars=2.0), "budget-exhausted"),
    (Spent(iterations=5, active_seconds=3600), "timeout"),
])
def test_exhausted_names_the_first_limit_reached(make_goal, spent, reason):
    assert budget.exhausted(make_goal(budget=LIMITS, spent=spent)) == reason


def test_the_limits_not_set_are_never_reached(make_goal):
    goal = make_goal(budget=Budget(max_iterations=5), spent=Spent(iterations=4, active_seconds=10**9,
                                                                  maker_dollars=10**6, oracle_tokens=10**9))
    assert budget.exhausted(goal) is None and budget.dollars_left(goal) is None


def test_dollars_left_counts_maker_and_oracle(make_goal):
    goal = make_goal(budget=LIMITS, spent=Spent(maker_dollars=0.5, oracle_dollars=0.25))
    assert budget.dollars_left(goal) == pytest.approx(1.25)
