"""The ``conditions`` judge: no model at all, the conditions alone plus an optional ``--expect`` regex."""

from __future__ import annotations

import re

from ..errors import InvalidInput
from ..models import ConditionResult, Verdict
from ..system.text import cut
from .input import ConditionInput, OracleInput
from .verdict import Judgement


class ConditionsOracle:
    """No model: the conditions decide, and ``expect`` (a regex the maker's last message must match)
    can only add a requirement. Chosen explicitly, never as a silent fallback."""

    name = "conditions"

    def __init__(self, expect: str | None = None) -> None:
        try:
            self.expect = re.compile(expect, re.MULTILINE) if expect else None
        except re.error as exc:
            raise InvalidInput(f"--expect {expect!r} is not a valid regular expression ({exc})") from None

    def estimate_cost(self, oracle_input: OracleInput) -> float:
        return 0.0

    def judge(self, oracle_input: OracleInput) -> Judgement:
        failing = [c for c in oracle_input.conditions if not c.passed]
        reasons = [f"[{c.index}] {c.type} `{c.command}` failed ({_how(c)})" for c in failing]
        hint = _hint(failing)
        claimed = self.expect is None or bool(self.expect.search(oracle_input.maker_summary or ""))
        if not claimed:
            assert self.expect is not None
            reasons.append(f"the maker's last message does not match --expect {self.expect.pattern!r}")
            hint = hint or ("When the work is done, say so in your last message in words that match "
                            f"{self.expect.pattern!r}.")
        if not reasons:
            reasons.append("every stopping condition passed" + (" and the maker's message matches --expect"
                                                                 if self.expect else ""))
        verdict = Verdict(converged=not failing and claimed,
                          condition_results=[ConditionResult(type=c.type, passed=c.passed,
                                                             output=c.failures[0] if c.failures else "")
                                             for c in oracle_input.conditions],
                          reasons=reasons, next_hint=hint, confidence=1.0)
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
