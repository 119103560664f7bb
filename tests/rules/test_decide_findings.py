"""decide's policy for the tripwires' findings (Integrity.findings), for every kind of judge: a model
judge's verdict decides; with no model judge a green run with findings stops as flagged, for a person."""

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


@pytest.mark.parametrize("provider, findings, passes, verdict", list(itertools.product(
    PROVIDERS, [[], [FINDING]], [[True, True], [True, False]], [YES, NO, None])))
def test_findings_policy_for_every_judge(provider, findings, passes, verdict):
    guard = Integrity(findings=findings)
    d = decide(goal_judged_by(provider), evidence(passes, integrity=guard), verdict)
    would_converge = all(passes) and verdict is YES
    if not would_converge:  # findings never change a run that would not converge anyway
        assert d.action != "converge" and d.stop_reason != "flagged"
    elif findings and provider not in MODEL_JUDGES:
        assert (d.action, d.stop_reason) == ("stop", "flagged")
        assert "calc.py:2" in d.hint and 'goal blocked "why"' in d.hint
        assert any("flagged for a person" in n for n in d.notes)
    else:  # a model judge read the findings, and its verdict decides
        assert (d.action, d.stop_reason) == ("converge", "converged")


def test_the_flagged_stop_is_an_escalation_and_model_judges_are_the_ones_that_read_findings():
    assert "flagged" in ESCALATION_REASONS
    assert set(MODEL_JUDGES) == {"anthropic", "claude-cli", "auto"}


def test_a_refusal_of_the_guard_comes_before_the_findings():
    guard = Integrity(issues=[IntegrityIssue(kind="test-gone", subject="t", detail="t is gone")], findings=[FINDING])
    d = decide(goal_judged_by("conditions"), evidence([True, True], integrity=guard), YES)
    assert d.action == "continue" and "t is gone" in d.hint
