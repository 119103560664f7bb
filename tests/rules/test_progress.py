"""What counts as moving (rules/progress.py) and the hidden expectation (rules/decide.py), as pure rules: a
metric that stops improving is stuck and one that gets worse is said so; a check or test that passed and fails
now is blamed on the iteration that broke it; `--expect` holds back a converged verdict without being named."""

from __future__ import annotations

import pytest

from goal_convergence.models import (Budget, Census, Checkpoint, ConditionEvidence, Decision, Goal, Iteration,
                                     OracleConfig, Spent, StoppingCondition, target)
from goal_convergence.rules import progress
from goal_convergence.rules.decide import EXPECTATION_HINT, Evidence, decide
from tests.rules.test_decide import STAMP, YES

LINT = "ruff check . --statistics | wc -l"


def goal(conditions: list[StoppingCondition], history=(), stuck_after=3, expect=None) -> Goal:
    return Goal(goal_id="goal-abcd1234", objective="bring the lint warnings to 0", stopping_conditions=conditions,
                budget=Budget(max_iterations=30), oracle=OracleConfig(model="claude-haiku-5-5", expect=expect),
                spent=Spent(iterations=len(history) + 1), project_root="/tmp/p", stuck_after=stuck_after,
                base_tree="t0", history=list(history), created_at=STAMP, updated_at=STAMP)


METRIC = StoppingCondition(type="metric", command=LINT, target="<= 0")
TESTS = StoppingCondition(type="test_pass", command="pytest -q")


def measured(value: float | None, index: int = 0, want: str = "<= 0") -> ConditionEvidence:
    met = value is not None and target.meets(value, want)
    return ConditionEvidence(index=index, type="metric", command=LINT, passed=met, exit_code=0, metric=value)


def suite(passed: bool, failed: list[str] = (), ids: int = 3, index: int = 1) -> ConditionEvidence:
    census = Census(runner="pytest", ran=ids, failed=len(failed), ids=ids)
    return ConditionEvidence(index=index, type="test_pass", command="pytest -q", passed=passed,
                             exit_code=0 if passed else 1, census=census, failed_tests=list(failed))


def it(n: int, conditions: list[ConditionEvidence], tree: str | None = None, changed=()) -> Iteration:
    checkpoint = Checkpoint(commit="a" * 40, ref=f"refs/goal-convergence/goal-abcd1234/{n}", changed=list(changed),
                            changed_count=len(changed))
    return Iteration(number=n, started_at=STAMP, ended_at=STAMP, conditions=conditions,
                     tree_fingerprint=tree or f"t{n}", decision=Decision(action="continue", hint="h"),
                     checkpoint=checkpoint)


@pytest.mark.parametrize(("want", "new", "old", "better"), [
    ("<= 0", 3, 5, True), ("<= 0", 5, 3, False), ("<= 0", 4, 4, False), ("< 200", 150, 180, True),
    (">= 90", 91, 80, True), (">= 90", 70, 80, False), (">  1", 2, 1, True), ("== 10", 9, 13, True),
    ("== 10", 12, 9, False),
])
def test_which_way_is_better_follows_the_target(want, new, old, better):
    assert target.better(new, old, want) is better


@pytest.mark.parametrize("bad", ["0", "<= ", "=< 0", "<= zero", "~ 5", ""])
def test_a_target_that_is_not_a_comparison_is_refused_with_the_forms(bad):
    with pytest.raises(ValueError, match="'<= 0', '>= 90' or '< 200'"):
        target.parse_target(bad)


def test_a_falling_metric_is_progress_and_one_that_stops_falling_is_stuck_after_stuck_after():
    history = [it(1, [measured(12)]), it(2, [measured(7)]), it(3, [measured(7)]), it(4, [measured(9)])]
    still = goal([METRIC], history[:2])
    assert progress.metric_stall(still, [measured(5)]) == 0  # a new best
    stalled = goal([METRIC], history)
    # 3 and 4 and now did not beat 7: three in a row, though the files changed each time
    assert progress.metric_stall(stalled, [measured(8)]) == 3
    decision = decide(stalled, Evidence(conditions=[measured(8)], tree_fingerprint="t5"), None)
    assert (decision.action, decision.stop_reason) == ("stop", "stuck")
    assert "no failing metric improved" in decision.notes[-1]


def test_a_metric_that_reaches_its_target_is_not_stuck_and_more_passing_conditions_count_as_moving():
    history = [it(1, [measured(3), suite(False, ["t::a"])]), it(2, [measured(3), suite(False, ["t::a"])]),
               it(3, [measured(3), suite(False, ["t::a"])])]
    g = goal([METRIC, TESTS], history)
    assert progress.metric_stall(g, [measured(3), suite(True)]) == 0  # the tests began to pass
    assert progress.metric_stall(g, [measured(0), suite(False, ["t::a"])]) == 0  # the metric is met


def test_a_metric_that_gets_worse_is_said_so_in_the_hint():
    g = goal([METRIC], [it(1, [measured(12)])])
    decision = decide(g, Evidence(conditions=[measured(15)], tree_fingerprint="t2"), None)
    assert decision.action == "continue"
    assert decision.hint.startswith(f"The metric `{LINT}` got worse: 12 → 15 (target <= 0).")
    better = decide(g, Evidence(conditions=[measured(10)], tree_fingerprint="t2"), None)
    assert "got worse" not in better.hint


def test_a_condition_that_passed_is_blamed_on_the_first_iteration_that_failed_it_with_its_files():
    history = [it(1, [suite(False, ["t::a"])]), it(2, [suite(True)]), it(3, [suite(True)]),
               it(4, [suite(False, ["t::b"])], changed=["src/parser.py", "src/util.py"])]
    g = goal([METRIC, TESTS], history)
    found = progress.regressions(g, [suite(False, ["t::b"])], ["src/other.py"], 5, lambda i: {"t::a", "t::b"})
    assert [(r.condition, r.test, r.passed_at, r.since, r.files) for r in found] == [
        (1, None, 3, 4, ["src/parser.py", "src/util.py"])]
    hint = progress.regression_hint(g, found)
    assert hint == ("Regressions: `pytest -q` passed at iteration 3 and fails since iteration 4, which changed "
                    "src/parser.py, src/util.py (`goal diff goal-abcd1234 4`).")
    # broken in this very iteration: its own files are the blame
    now = progress.regressions(goal([METRIC, TESTS], history[:3]), [suite(False, ["t::b"])], ["src/x.py"], 4,
                               lambda i: set())
    assert [(r.since, r.files) for r in now] == [(4, ["src/x.py"])]


def test_a_test_that_passed_before_is_blamed_and_a_test_that_never_passed_is_not():
    began = {"t::old", "t::never"}
    history = [it(1, [suite(False, ["t::never"])]), it(2, [suite(False, ["t::never"])], changed=["a.py"]),
               it(3, [suite(False, ["t::never", "t::old"])], changed=["b.py"])]
    g = goal([METRIC, TESTS], history)
    now = [suite(False, ["t::never", "t::old", "t::new"])]
    found = progress.regressions(g, now, ["c.py"], 4, lambda i: began)
    # t::new was not there when the goal began: no iteration shows it passing, whatever the failures said
    assert [(r.test, r.passed_at, r.since, r.files) for r in found] == [("t::old", 2, 3, ["b.py"])]
    decision = decide(g, Evidence(conditions=now, tree_fingerprint="t4", regressions=found), None)
    assert "test t::old passed at iteration 2 and fails since iteration 3, which changed b.py" in decision.hint


def test_the_start_ids_are_read_only_when_a_test_could_have_regressed():
    reads = []
    g = goal([TESTS], [it(1, [ConditionEvidence(index=0, type="test_pass", command="pytest -q", passed=True)])])
    assert progress.regressions(g, [suite(False, ["t::a"], index=0)], [], 2, lambda i: reads.append(i) or set())
    assert reads == []  # the condition itself regressed: no test needs the start census


@pytest.mark.parametrize("summary", [None, "", "done", "all done (lowercase)", "I echo the hint: say so in words"])
def test_an_expectation_the_maker_misses_holds_back_a_converged_verdict_without_naming_it(summary):
    g = goal([TESTS], expect=r"^ALL DONE: [0-9]+ fixed$")
    green = [ConditionEvidence(index=0, type="test_pass", command="pytest -q", passed=True, exit_code=0)]
    decision = decide(g, Evidence(conditions=green, tree_fingerprint="t1", maker_summary=summary), YES)
    assert decision.action == "continue" and decision.hint == EXPECTATION_HINT
    assert "ALL DONE" not in decision.hint + " ".join(decision.notes)
    met = decide(g, Evidence(conditions=green, tree_fingerprint="t1", maker_summary="ok\nALL DONE: 3 fixed\n"), YES)
    assert met.action == "converge"
