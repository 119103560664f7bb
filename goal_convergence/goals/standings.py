"""Where each parallel attempt at a goal stands (`goal run --attempts`, attempts.py), worked out from the goal's
history alone: what `goal status`, the report and the triage item show side by side."""

from __future__ import annotations

from dataclasses import dataclass

from ..models import Goal, Iteration


@dataclass(frozen=True)
class Standing:
    attempt: int
    iterations: list[Iteration]
    state: str  # won, stopped (another won, or it ended alone), working, paused or escalated

    @property
    def best(self) -> Iteration:
        """Its iteration with the most conditions passing; of equals, the latest."""
        return max(self.iterations, key=lambda it: (passing(it), it.number))

    @property
    def dollars(self) -> float:
        return sum(it.maker_cost.dollars + it.oracle_cost.dollars for it in self.iterations)

    @property
    def reason(self) -> str:
        """Why its last iteration was judged as it was: the oracle's first reason, else the decision's last note."""
        last = self.iterations[-1]
        said = (last.verdict.reasons if last.verdict else []) or ([last.judge_error] if last.judge_error else [])
        return next(iter(said), None) or (last.decision.notes[-1] if last.decision.notes else "")


def passing(it: Iteration) -> int:
    return sum(c.passed for c in it.conditions)


def standings(goal: Goal) -> list[Standing]:
    """One standing an attempt, in attempt order; none unless the history holds more than one attempt."""
    numbers = sorted({it.attempt for it in goal.history if it.attempt})
    if len(numbers) < 2:
        return []
    final = goal.history[-1]
    out = []
    for k in numbers:
        own = [it for it in goal.history if it.attempt == k]
        if goal.state == "converged":
            state = "won" if final.attempt == k and final.decision.action == "converge" else "stopped"
        elif own[-1].decision.action == "stop" and own[-1] is not final or goal.state == "failed":
            state = "stopped"
        else:
            state = {"active": "working", "paused": "paused"}.get(goal.state, "escalated")
        out.append(Standing(k, own, state))
    return out
