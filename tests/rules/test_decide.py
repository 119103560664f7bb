"""The pure decision step, tested exhaustively with hypothesis plus one example per rule."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from goal_convergence.models import (Budget, ConditionEvidence, Decision, Goal, Integrity, IntegrityIssue, Iteration,
                                     OracleConfig, Spent, StoppingCondition, Unfixable, Verdict, now_iso)
from goal_convergence.rules import budget
from goal_convergence.rules.decide import JUDGE_ERROR_HINT, Evidence, classify_blocker, decide, no_progress

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
STAMP = now_iso(NOW)


def make_goal(history=(), spent=None, budget_=None, stuck_after=3, base_tree="t0", n_conditions=2) -> Goal:
    return Goal(
        goal_id="goal-abcd1234",
        objective="make all tests pass",
        stopping_conditions=[StoppingCondition(type="test_pass", command=f"check {i}") for i in range(n_conditions)],
        budget=budget_ or Budget(max_iterations=15, max_duration="2h", max_dollars=10.0),
        oracle=OracleConfig(model="claude-haiku-5-5"),
        spent=spent or Spent(iterations=len(history) + 1),
        project_root="/tmp/p",
        stuck_after=stuck_after,
        base_tree=base_tree,
        history=list(history),
        created_at=STAMP,
        updated_at=STAMP,
    )


def cond(i: int, passed: bool) -> ConditionEvidence:
    return ConditionEvidence(index=i, type="test_pass", command=f"check {i}", passed=passed,
                             exit_code=0 if passed else 1, failure_lines=[] if passed else [f"FAILED test_{i}"])


def iteration(n: int, tree: str, verdict: Verdict | None = None, judge_error: str | None = None) -> Iteration:
    return Iteration(number=n, started_at=STAMP, ended_at=STAMP, conditions=[cond(0, False)], tree_fingerprint=tree,
                     verdict=verdict, judge_error=judge_error, decision=Decision(action="continue", hint="h"))


def evidence(passes: list[bool], tree="t1", after=None, **kw) -> Evidence:
    return Evidence(conditions=[cond(i, p) for i, p in enumerate(passes)], tree_fingerprint=tree,
                    tree_after_judge=tree if after is None else after, **kw)


YES = Verdict(converged=True, reasons=["all good"], next_hint="", confidence=0.9)
NO = Verdict(converged=False, reasons=["test_x still fails"], next_hint="fix foo() in foo.py", confidence=0.8)

verdicts = st.one_of(
    st.none(),
    st.builds(Verdict, converged=st.booleans(), reasons=st.lists(st.text(max_size=20), max_size=2),
              next_hint=st.text(max_size=30), confidence=st.floats(0, 1),
              unfixable=st.one_of(st.none(), st.builds(Unfixable, reason=st.text(min_size=1, max_size=20)))),
)
spents = st.builds(Spent, iterations=st.integers(1, 30), active_seconds=st.floats(0, 20000),
                   maker_dollars=st.floats(0, 20), oracle_dollars=st.floats(0, 20),
                   maker_tokens=st.integers(0, 10**7), oracle_tokens=st.integers(0, 10**7))
budgets = st.fixed_dictionaries({
    "max_iterations": st.one_of(st.none(), st.integers(1, 30)),
    "max_duration": st.one_of(st.none(), st.sampled_from(["30m", "2h", "1h30m"])),
    "max_dollars": st.one_of(st.none(), st.floats(0.5, 20)),
    "max_tokens": st.one_of(st.none(), st.integers(1, 10**7)),
}).filter(lambda b: any(v is not None for v in b.values())).map(lambda b: Budget(**b))
trees = st.sampled_from(["t0", "t1", "t2"])
histories = st.lists(st.tuples(trees, st.booleans()), max_size=6).map(
    lambda items: [iteration(i + 1, t, None if err else NO, "boom" if err else None) for i, (t, err) in enumerate(items)])


@settings(max_examples=400, deadline=None)
@given(passes=st.lists(st.booleans(), min_size=1, max_size=4), verdict=verdicts, spent=spents, budget_=budgets,
       history=histories, tree=trees, after=trees, stuck_after=st.integers(1, 5),
       summary=st.one_of(st.none(), st.text(max_size=40)), unaffordable=st.booleans(), maker_failed=st.booleans())
def test_decide_invariants(passes, verdict, spent, budget_, history, tree, after, stuck_after, summary,
                           unaffordable, maker_failed):
    goal = make_goal(history=history, spent=spent, budget_=budget_, stuck_after=stuck_after)
    before = goal.dump()
    ev = evidence(passes, tree=tree, after=after, maker_summary=summary, unaffordable=unaffordable,
                  maker_failed=maker_failed)
    d = decide(goal, ev, verdict)
    assert goal.dump() == before, "decide must not change the goal (spent counters never move here)"
    if not all(passes) or verdict is None or not verdict.converged:
        assert d.action != "converge", "a red condition or a missing/negative verdict never converges"
    if d.action == "converge":
        assert all(passes) and verdict is not None and verdict.converged and tree == after
        assert d.stop_reason == "converged"
    if budget.exhausted(goal):
        assert d.action in ("converge", "stop", "recheck"), "an exhausted budget always stops"
    if d.action == "stop":
        assert d.stop_reason not in (None, "converged", "cancelled")
    if d.action == "continue":
        assert d.hint, "continuing always hands the maker a hint"


def test_converges_when_green_and_oracle_agrees():
    d = decide(make_goal(), evidence([True, True]), YES)
    assert (d.action, d.stop_reason) == ("converge", "converged")


def test_oracle_converged_over_red_is_overridden_and_recorded():
    d = decide(make_goal(), evidence([True, False]), YES)
    assert d.action == "continue"
    assert any("overridden" in n for n in d.notes)
    assert "FAILED test_1" in d.hint


def test_oracle_veto_of_green_run_continues_with_its_hint():
    d = decide(make_goal(), evidence([True, True]), NO)
    assert d.action == "continue" and d.hint == "fix foo() in foo.py"
    assert any("vetoed" in n for n in d.notes)


def test_stale_evidence_is_rechecked():
    d = decide(make_goal(), evidence([True, True], tree="t1", after="t2"), YES)
    assert d.action == "recheck"


def test_no_verdict_never_converges_and_three_judge_errors_stop():
    goal = make_goal(history=[iteration(1, "a", judge_error="x"), iteration(2, "b", judge_error="x")])
    d = decide(goal, evidence([True, True], tree="c", judge_error="no API key: set ANTHROPIC_API_KEY"), None)
    assert (d.action, d.stop_reason) == ("stop", "judge-error")
    # the escalation shows the last notes: they say what went wrong and what to do
    assert "no API key: set ANTHROPIC_API_KEY" in d.notes[-1] and "goal resume goal-abcd1234" in d.notes[-1]
    one = make_goal(history=[iteration(1, "a", judge_error="x")])
    again = decide(one, evidence([True, True], tree="c", judge_error="x"), None)
    assert again.action == "continue" and again.hint == JUDGE_ERROR_HINT  # not "the goal is not judged met"
    red = decide(one, evidence([True, False], tree="c", judge_error="x"), None)
    assert red.action == "continue" and "FAILED test_1" in red.hint


def test_unfixable_stops():
    v = Verdict(converged=False, unfixable=Unfixable(reason="needs a GPU", evidence=["no CUDA"]))
    d = decide(make_goal(), evidence([False]), v)
    assert (d.action, d.stop_reason) == ("stop", "unfixable")


def test_ceiling_timeout_and_dollars():
    at_ceiling = make_goal(spent=Spent(iterations=15))
    assert decide(at_ceiling, evidence([False]), NO).stop_reason == "ceiling"
    timed_out = make_goal(spent=Spent(iterations=2, active_seconds=7300))
    assert decide(timed_out, evidence([False]), NO).stop_reason == "timeout"
    broke = make_goal(spent=Spent(iterations=2, maker_dollars=9.5, oracle_dollars=0.6))
    assert decide(broke, evidence([False]), NO).stop_reason == "budget-exhausted"
    assert decide(make_goal(), evidence([False], unaffordable=True), None).stop_reason == "budget-exhausted"


def test_converging_on_the_last_iteration_wins_over_the_ceiling():
    assert decide(make_goal(spent=Spent(iterations=15)), evidence([True]), YES).action == "converge"


def test_stuck_after_k_unchanged_trees():
    history = [iteration(1, "t0"), iteration(2, "t0")]
    goal = make_goal(history=history, base_tree="t0", stuck_after=3)
    assert no_progress(goal, evidence([False], tree="t0")) == 3
    assert decide(goal, evidence([False], tree="t0"), NO).stop_reason == "stuck"
    moving = make_goal(history=[iteration(1, "a"), iteration(2, "b")], base_tree="t0")
    assert decide(moving, evidence([False], tree="c"), NO).action == "continue"


def test_stuck_cap_lowers_k():
    goal = make_goal(history=[iteration(1, "t0")], base_tree="t0", stuck_after=10)
    assert decide(goal, evidence([False], tree="t0"), NO).action == "continue"
    assert decide(goal, evidence([False], tree="t0"), NO, stuck_cap=2).stop_reason == "stuck"


def test_blockers_are_typed():
    assert classify_blocker("I need your input on which database to use.") == "needs_user_input"
    assert classify_blocker("Waiting on the CI build server before I can continue") == "external_wait"
    assert classify_blocker("Fixed the parser; all tests pass.") is None
    goal = make_goal(base_tree="t1")
    d = decide(goal, evidence([False], tree="t1", maker_summary="Could you confirm the API shape?"), NO)
    assert (d.stop_reason, d.blocker) == ("stuck", "needs_user_input")
    failed = decide(goal, evidence([False], tree="t1", maker_failed=True), NO)
    assert (failed.stop_reason, failed.blocker) == ("stuck", "run_failed")


def test_a_goal_blocked_line_in_the_makers_message_stops_as_unfixable_with_its_reason():
    said = "I tried.\n**GOAL BLOCKED:** the spec and the test disagree\n"
    d = decide(make_goal(), evidence([False, True], maker_summary=said), NO)
    assert (d.action, d.stop_reason, d.blocker) == ("stop", "unfixable", "needs_user_input")
    assert "the maker says the goal cannot be met as written: the spec and the test disagree" in d.notes
    assert decide(make_goal(), evidence([True, True], maker_summary=said), YES).action == "converge"
    assert decide(make_goal(), evidence([False, True], maker_summary="no goal blocked: here"), NO).action == "continue"


def test_the_hint_of_a_refused_green_run_names_the_honest_way_out():
    guard = Integrity(changed=["tests/test_x.py"],
                      issues=[IntegrityIssue(kind="test-gone", subject="t", detail="a test was deleted")])
    d = decide(make_goal(), evidence([True, True], integrity=guard), YES)
    assert d.action == "continue" and "GOAL BLOCKED: <why>" in d.hint and 'goal blocked "<why>"' in d.hint
