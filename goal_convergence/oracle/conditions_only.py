"""The ``conditions`` judge: no model at all, the conditions alone. (A goal's ``--expect``, a hidden check of the
maker's words, holds for every judge: rules/decide.py applies it.)"""

from __future__ import annotations

from ..models import ConditionResult, Verdict
from ..system.text import cut
from .input import ConditionInput, OracleInput
from .verdict import Judgement


class ConditionsOracle:
    """No model: the conditions decide. Chosen explicitly, never as a silent fallback."""

    name = "conditions"
    # A pure function of the evidence: it is shown no diff, and cannot have written the tree (every other judge
    # looks at the project, so the engine fingerprints the tree again after it answers).
    reads_tree = False

    def estimate_cost(self, oracle_input: OracleInput) -> float:
        return 0.0

    def judge(self, oracle_input: OracleInput) -> Judgement:
        failing = [c for c in oracle_input.conditions if not c.passed]
        reasons = [f"[{c.index}] {c.type} `{c.command}` failed ({_how(c)})" for c in failing]
        verdict = Verdict(converged=not failing,
                          condition_results=[ConditionResult(type=c.type, passed=c.passed,
                                                             output=c.failures[0] if c.failures else "")
                                             for c in oracle_input.conditions],
                          reasons=reasons or ["every stopping condition passed"], next_hint=_hint(failing),
                          confidence=1.0)
        return Judgement(verdict=verdict, model="conditions",
                         notes=["no independent judge: the verdict is the conditions alone"])


def _how(c: ConditionInput) -> str:
    if c.error:
        return cut(c.error, 200)
    if c.timed_out:
        return "timed out"
    if c.coverage is not None and c.threshold is not None and c.coverage < c.threshold:
        return f"coverage {c.coverage:g}% is below {c.threshold:g}%"
    return f"exit {c.exit_code}"


def _hint(failing: list[ConditionInput]) -> str:
    if not failing:
        return ""
    parts = [f"[{c.index}] `{c.command}`: " + ("; ".join(c.failures[:5]) or _how(c)) for c in failing]
    return cut("Make the failing checks pass. " + " | ".join(parts), 1_500)
