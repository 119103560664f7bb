"""The plan (plan.py) and what decide makes of it: the judge's task changes applied defensively, and a green run
the oracle calls converged held back by an open task or a confidence below the goal's minimum."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goal_convergence.errors import UsageError
from goal_convergence.models import ConditionEvidence, Task, TaskChanges, Verdict
from goal_convergence.rules import plan
from goal_convergence.rules.decide import Evidence, decide
from tests.rules.test_decide import YES, evidence, make_goal

# ---- plan.apply --------------------------------------------------------------------------------


def test_seed_numbers_tasks_from_t1_in_order_and_keeps_a_title_once():
    tasks = plan.seed(["write the parser", "  document   the flag ", "Write the parser"])
    assert [(t.id, t.title, t.state, t.added_by, t.added_in) for t in tasks] == [
        ("t1", "write the parser", "open", "user", 0), ("t2", "document the flag", "open", "user", 0)]


@pytest.mark.parametrize("titles, provider, message", [
    (["ok", "   "], "auto", "--task needs a title"),
    (["ok"], "conditions", "--oracle conditions has no judge"),
    ([f"task {i}" for i in range(plan.MAX_TASKS + 1)], "auto", "more than a plan can keep"),
])
def test_seed_refuses_what_could_never_converge(titles, provider, message):
    with pytest.raises(UsageError, match=message):
        plan.seed(titles, provider)


def test_the_judge_completes_and_adds_with_short_ids_and_the_input_is_left_as_it_was():
    before = plan.seed(["write the parser", "document the flag"])
    after, notes = plan.apply(before, TaskChanges(add=["add a test for empty input"], complete=["t1", "T2"]), 4)
    assert [(t.id, t.state, t.done_in) for t in after[:2]] == [("t1", "done", 4), ("t2", "done", 4)]
    assert (after[2].id, after[2].title, after[2].added_by, after[2].added_in) == (
        "t3", "add a test for empty input", "oracle", 4)
    assert notes == ["the oracle added to the plan: t3 add a test for empty input"]
    assert [t.state for t in before] == ["open", "open"]  # a preview of the plan does not change the goal's


def test_an_unknown_id_is_ignored_with_a_note_and_a_done_task_stays_done_from_its_iteration():
    tasks, _ = plan.apply(plan.seed(["a", "b"]), TaskChanges(complete=["t1"]), 2)
    after, notes = plan.apply(tasks, TaskChanges(complete=["t1", "t9", "x1", "tasks"]), 3)
    assert [(t.id, t.state, t.done_in) for t in after] == [("t1", "done", 2), ("t2", "open", None)]
    assert notes == [f"the oracle completed task {raw!r}, which the plan does not hold: ignored"
                     for raw in ("t9", "x1", "tasks")]


def test_a_title_already_in_the_plan_is_not_added_again_open_or_done():
    tasks, _ = plan.apply(plan.seed(["Write the parser", "b"]), TaskChanges(complete=["t1"]), 1)
    after, notes = plan.apply(tasks, TaskChanges(add=["write  the PARSER", "b", "c", "c", ""]), 2)
    assert [(t.id, t.title) for t in after] == [("t1", "Write the parser"), ("t2", "b"), ("t3", "c")]
    assert notes == ["the oracle added to the plan: t3 c"]


def test_a_long_title_is_cut_to_one_line_and_the_plan_stops_growing_at_its_most():
    long = "fix the parser\n" + "x" * 1_000
    after, _ = plan.apply([], TaskChanges(add=[long]), 1)
    assert len(after[0].title) == plan.MAX_TITLE and "\n" not in after[0].title and after[0].title.endswith("…")
    full, notes = plan.apply([], TaskChanges(add=[f"task {i}" for i in range(plan.MAX_TASKS + 2)]), 1)
    assert len(full) == plan.MAX_TASKS and full[-1].id == f"t{plan.MAX_TASKS}"
    assert sum("its most" in n for n in notes) == 2


def test_ids_follow_the_highest_even_after_a_gap():
    tasks = [Task(id="t1", title="a"), Task(id="t7", title="b", state="done", done_in=2)]
    after, _ = plan.apply(tasks, TaskChanges(add=["c"]), 3)
    assert after[-1].id == "t8"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.lists(st.text(max_size=12), max_size=4),
                          st.lists(st.sampled_from(["t1", "t2", "t3", "t4", "t30", "bad"]), max_size=3)), max_size=6))
def test_any_sequence_of_changes_keeps_ids_unique_and_done_tasks_done(rounds):
    tasks: list[Task] = []
    for n, (add, complete) in enumerate(rounds, start=1):
        done = {t.id for t in tasks if t.state == "done"}
        tasks, _ = plan.apply(tasks, TaskChanges(add=add, complete=complete), n)
        ids = [t.id for t in tasks]
        assert len(ids) == len(set(ids)) and len(ids) <= plan.MAX_TASKS
        assert done <= {t.id for t in tasks if t.state == "done"}
        assert all(t.title and len(t.title) <= plan.MAX_TITLE for t in tasks)
        assert len({t.title.casefold() for t in tasks}) == len(tasks)


# ---- decide ------------------------------------------------------------------------------------


def with_plan(*titles_done: tuple[str, bool], min_confidence=None):
    goal = make_goal()
    goal.tasks = [Task(id=f"t{i}", title=title, state="done" if done else "open", done_in=1 if done else None)
                  for i, (title, done) in enumerate(titles_done, start=1)]
    goal.min_confidence = min_confidence
    return goal


def test_green_and_agreed_with_an_open_task_continues_with_a_hint_naming_it():
    d = decide(with_plan(("write the parser", True), ("document the flag", False)), evidence([True, True]), YES)
    assert d.action == "continue" and d.stop_reason is None
    assert "t2 document the flag" in d.hint and "write the parser" not in d.hint
    assert "1 task(s) of the plan are open: t2" in d.notes[-1]


def test_green_agreed_and_every_task_done_converges():
    d = decide(with_plan(("write the parser", True), ("document the flag", True)), evidence([True, True]), YES)
    assert (d.action, d.stop_reason) == ("converge", "converged")


def test_a_converged_verdict_below_the_minimum_confidence_is_a_veto_with_that_reason():
    unsure = YES.model_copy(update={"confidence": 0.6, "reasons": ["the tests pass, but the README was not read"]})
    d = decide(with_plan(min_confidence=0.8), evidence([True, True]), unsure)
    assert d.action == "continue"
    assert d.notes[-1] == ("the oracle said converged with confidence 0.6, below the goal's minimum 0.8: counted as a "
                           "veto (the tests pass, but the README was not read)")
    assert "confidence 0.6 (this goal needs 0.8)" in d.hint
    assert decide(with_plan(min_confidence=0.6), evidence([True, True]), unsure).action == "converge"  # at it: enough


def test_open_tasks_and_a_low_confidence_never_stop_a_red_run_from_being_red():
    d = decide(with_plan(("a", False), min_confidence=0.99), evidence([True, False]), YES)
    assert d.action == "continue" and "`check 1` fails" in d.hint


def test_the_veto_still_counts_towards_stuck_and_the_budget():
    goal = with_plan(("a", False))
    goal.spent.iterations = goal.budget.max_iterations
    d = decide(goal, evidence([True, True]), YES)
    assert (d.action, d.stop_reason) == ("stop", "ceiling") and "t1 a" in d.hint


@settings(max_examples=300, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=4), st.lists(st.booleans(), max_size=4),
       st.floats(0, 1), st.one_of(st.none(), st.floats(0, 1)), st.booleans())
def test_a_converge_always_has_every_task_done_and_enough_confidence(passes, task_states, confidence, floor, agreed):
    goal = with_plan(*[(f"task {i}", done) for i, done in enumerate(task_states)], min_confidence=floor)
    verdict = Verdict(converged=agreed, reasons=["r"], confidence=confidence)
    ev = Evidence(conditions=[ConditionEvidence(index=i, type="test_pass", command=f"check {i}", passed=p,
                                                exit_code=0 if p else 1) for i, p in enumerate(passes)],
                  tree_fingerprint="t1", tree_after_judge="t1")
    d = decide(goal, ev, verdict)
    ok = all(passes) and agreed and all(task_states) and (floor is None or confidence >= floor)
    assert (d.action == "converge") == ok
