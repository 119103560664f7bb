"""The triage inbox in-process: filing an escalation, listing, dismissing and acting."""

from __future__ import annotations

import pytest

from goal_convergence.errors import IllegalTransition
from goal_convergence.goals import triage
from goal_convergence.models import ConditionEvidence, Decision, Escalation, Iteration, TriageItem, now_iso
from goal_convergence.storage.store import Store
from tests.fakes import T0

STAMP = now_iso(T0)


@pytest.fixture
def escalated(store, make_goal):
    """A goal escalated as stuck after one failing iteration."""
    failing = ConditionEvidence(index=0, type="test_pass", command="python -m pytest -q", passed=False, exit_code=1,
                                failure_lines=["FAILED tests/test_calc.py::test_add"])
    goal = make_goal(state="escalated", stop_reason="stuck")
    goal.history = [Iteration(number=1, started_at=STAMP, ended_at=STAMP, conditions=[failing],
                              decision=Decision(action="stop", stop_reason="stuck", hint="fix add()",
                                                notes=["no change to the files for 3 iterations in a row"]))]
    goal.spent.iterations = 1
    goal.escalation = Escalation(stop_reason="stuck", triage_id=triage.new_triage_id(), at=STAMP)
    return store.create(goal)


def test_filing_an_escalation_writes_one_item_whatever_the_retries(store, escalated):
    item = triage.file_escalation(store, escalated, T0)
    assert (item.triage_id, item.goal_id, item.stop_reason, item.status) == (
        escalated.escalation.triage_id, escalated.goal_id, "stuck", "open")
    assert item.hint == "fix add()" and item.iterations == 1
    assert item.failing_conditions[0].first_failure == "FAILED tests/test_calc.py::test_add"
    assert "no change to the files for 3 iterations in a row" in item.reasons
    assert triage.file_escalation(store, escalated, T0) == item
    assert [i.triage_id for i in triage.list_items(store)] == [item.triage_id]


def test_a_dismissed_item_leaves_the_open_list_and_cannot_be_dismissed_or_acted_on_again(store, escalated):
    item = triage.file_escalation(store, escalated, T0)
    assert triage.dismiss(store, item.triage_id).status == "dismissed"
    assert triage.list_items(store) == [] and [i.status for i in triage.list_items(store, show_all=True)] == [
        "dismissed"]
    with pytest.raises(IllegalTransition, match=f"{item.triage_id} is already dismissed"):
        triage.dismiss(store, item.triage_id)
    with pytest.raises(IllegalTransition, match="already dismissed"):
        triage.act(store, item.triage_id, {})


class RacingStore(Store):
    """A store where another process dismisses the item just before this one takes the item's lock."""

    def update(self, kind, item_id, change):
        if kind is TriageItem:
            Store(self.root).update(TriageItem, item_id, lambda i: setattr(i, "status", "dismissed"))
        return super().update(kind, item_id, change)


def test_dismiss_checks_the_status_under_the_lock(store, escalated):
    item = triage.file_escalation(store, escalated, T0)
    with pytest.raises(IllegalTransition, match="already dismissed"):
        triage.dismiss(RacingStore(store.root), item.triage_id)


def test_acting_on_an_escalation_reopens_its_goal_with_the_raised_budget(store, escalated):
    item = triage.file_escalation(store, escalated, T0)
    goal = triage.act(store, item.triage_id, {"max_iterations": 20}, now=T0)
    assert (goal.goal_id, goal.state, goal.budget.max_iterations, goal.escalation) == (
        escalated.goal_id, "active", 20, None)
    assert store.load(TriageItem, item.triage_id).status == "acted"
