"""A goal's trend: the per-iteration measures the report charts, the iteration that came closest, and the
one-line sparkline `goal status` shows."""

from __future__ import annotations

import pytest

from goal_convergence.goals import trend
from goal_convergence.models import Census, ConditionEvidence, Cost, Decision, Iteration, now_iso
from goal_convergence.report import render


def _it(n: int, passed: list[bool], failed: list[int | None], action: str = "continue", coverage: float | None = None,
        dollars: float = 0.0) -> Iteration:
    conds = [ConditionEvidence(index=i, type="test_pass", command="pytest", passed=p, coverage=coverage if i else None,
                               census=None if f is None else Census(runner="pytest", ran=10, failed=f, passed=10 - f))
             for i, (p, f) in enumerate(zip(passed, failed, strict=True))]
    return Iteration(number=n, started_at=now_iso(), ended_at=now_iso(), conditions=conds,
                     decision=Decision(action=action), maker_cost=Cost(dollars=dollars),
                     oracle_cost=Cost(dollars=dollars / 10))


@pytest.mark.parametrize(("values", "top", "drawn"), [
    ([0, 1, 2, 3, 4, 5, 6, 7], None, "▁▂▃▄▅▆▇█"),
    ([12, 6, 0], None, "█▅▁"),
    ([0, 0], None, "▁▁"),
    ([None, 3, None], None, "·█·"),
    ([1, 2], 2, "▅█"),
    ([5], 2, "█"),  # above the top: drawn at the top
])
def test_a_sparkline_scales_from_zero_to_the_top_and_shows_gaps(values, top, drawn):
    assert trend.spark(values, top) == drawn


def test_points_count_failing_tests_from_the_census_only_and_sum_the_cost(make_goal):
    goal = make_goal(history=[_it(1, [False, False], [4, None], dollars=0.1),
                              _it(2, [False, True], [None, None], coverage=71.5, dollars=0.2),
                              _it(3, [True, True], [0, 0], action="continue"),
                              _it(4, [True, True], [0, 0], action="converge")])
    got = trend.points(goal)
    assert [(p.passing, p.total, p.failing_tests, p.coverage) for p in got] == [
        (0, 2, 4, None), (1, 2, None, 71.5), (2, 2, 0, None), (2, 2, 0, None)]
    assert [round(p.cumulative, 6) for p in got] == [0.11, 0.33, 0.33, 0.33]
    assert [p.kind for p in got] == ["continue", "continue", "veto", "converge"]


def test_the_closest_iteration_has_the_most_passing_then_the_fewest_failing_tests_then_is_the_latest(make_goal):
    goal = make_goal(history=[_it(1, [True, False], [3, None]), _it(2, [True, False], [1, None]),
                              _it(3, [False, False], [0, None]), _it(4, [True, False], [1, None])])
    assert trend.best(goal).number == 4
    assert trend.best(make_goal()) is None


def test_status_shows_the_trend_in_one_line(make_goal):
    goal = make_goal(history=[_it(n, [f == 0, n > 2], [f, None]) for n, f in enumerate([8, 6, 2, 0], 1)])
    line = trend.line(goal)
    assert line == "trend #1-#4: failing tests [0] █▆▃▁ (8 → 0); passing ▁▁▅█ (0/2 → 2/2)"
    assert line in render.status(goal).splitlines()
    assert not [s for s in render.status(make_goal()).splitlines() if s.startswith("trend")]  # nothing to draw yet


def test_the_status_trend_shows_the_latest_iterations_only_and_passing_alone_without_a_census(make_goal):
    goal = make_goal(history=[_it(n, [n % 2 == 0], [None]) for n in range(1, 51)])
    line = trend.line(goal)
    assert line.startswith("trend #21-#50: passing ") and "failing tests" not in line
    assert len(line.split()[3]) == trend.SPARK_WIDTH


def test_a_failing_test_two_conditions_ran_counts_once_from_the_census_that_ran_the_most(make_goal):
    from goal_convergence.models import Baseline

    start = [Census(runner="pytest", ran=4, failed=1), Census(runner="pytest", ran=10, failed=1)]
    goal = make_goal(history=[_it(1, [False, False], [1, 1]), _it(2, [True, True], [0, 0])],
                     baseline=Baseline(census=start))
    assert trend.census_index(goal) == 1 and [p.failing_tests for p in trend.points(goal)] == [1, 0]
    assert trend.line(goal).startswith("trend #1-#2: failing tests [1] █▁ (1 → 0)")
