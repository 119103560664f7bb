"""decide's policy for the tripwires' findings (Integrity.findings), for every kind of judge: a model
judge clears each finding by its id or the run stops as flagged; with no model judge a green run with findings
stops as flagged, for a person."""

from __future__ import annotations

import itertools

import pytest

from goal_convergence.models import Integrity, IntegrityIssue, OracleConfig
from goal_convergence.rules.decide import MODEL_JUDGES, decide
from goal_convergence.rules.lifecycle import ESCALATION_REASONS
from tests.rules.test_decide import NO, YES, evidence, make_goal

FINDING = IntegrityIssue(kind="special-casing", subject="calc.py:2",
                         detail="calc.py:2, added since the goal began, compares against 7 and answers 42")
PROVIDERS = ("anthropic", "claude-cli", "auto", "command", "conditions")


def goal_judged_by(provider: str):
    goal = make_goal()
    goal.oracle = OracleConfig(provider=provider, model="claude-haiku-5-5",  # type: ignore[arg-type]
                               command="true" if provider == "command" else None)
    return goal


CLEARED = YES.model_copy(update={"findings_cleared": ["f1"]})


@pytest.mark.parametrize("provider, findings, passes, verdict", list(itertools.product(
    PROVIDERS, [[], [FINDING]], [[True, True], [True, False]], [YES, CLEARED, NO, None])))
def test_findings_policy_for_every_judge(provider, findings, passes, verdict):
    guard = Integrity(findings=findings)
    d = decide(goal_judged_by(provider), evidence(passes, integrity=guard), verdict)
    would_converge = all(passes) and verdict in (YES, CLEARED)
    if not would_converge:  # findings never change a run that would not converge anyway
        assert d.action != "converge" and d.stop_reason != "flagged"
    elif findings and not (provider in MODEL_JUDGES and verdict is CLEARED):
        # no model read them, or the model said "converged" without clearing the finding by its id
        assert (d.action, d.stop_reason) == ("stop", "flagged")
        assert "calc.py:2" in d.hint and 'goal blocked "<why>"' in d.hint
        assert any("flagged for a person" in n for n in d.notes)
    else:  # a model judge read the finding and cleared it
        assert (d.action, d.stop_reason) == ("converge", "converged")


def test_a_model_judge_clears_findings_one_by_one_and_never_past_those_it_was_shown():
    many = [FINDING.model_copy(update={"subject": f"calc.py:{n}"}) for n in range(1, 13)]
    goal = goal_judged_by("anthropic")
    some = YES.model_copy(update={"findings_cleared": ["f1", "f3"]})
    d = decide(goal, evidence([True], integrity=Integrity(findings=many[:3])), some)
    assert d.stop_reason == "flagged" and "calc.py:2" in d.notes[-1] and "calc.py:1" not in d.notes[-1]
    every = YES.model_copy(update={"findings_cleared": [f"f{n}" for n in range(1, 13)]})
    d = decide(goal, evidence([True], integrity=Integrity(findings=many)), every)
    assert d.stop_reason == "flagged"  # f11 and f12 were never shown to the judge (FINDINGS_SHOWN)


def test_the_flagged_stop_is_an_escalation_and_model_judges_are_the_ones_that_read_findings():
    assert "flagged" in ESCALATION_REASONS
    assert set(MODEL_JUDGES) == {"anthropic", "claude-cli", "auto"}


def test_a_refusal_of_the_guard_comes_before_the_findings():
    guard = Integrity(issues=[IntegrityIssue(kind="test-gone", subject="t", detail="t is gone")], findings=[FINDING])
    d = decide(goal_judged_by("conditions"), evidence([True, True], integrity=guard), YES)
    assert d.action == "continue" and "t is gone" in d.hint
