"""Fakes handed to the engine and the runner in place of their edges (engine.Edges): a clock that
moves only when told, and an oracle that gives scripted verdicts."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from goal_convergence.models import Cost, Verdict

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
ORACLE_CALL = Cost(dollars=0.01, tokens=100)


class Clock:
    """The time, moved on by ``advance`` alone: budgets of time are tested without waiting."""

    def __init__(self, start: datetime = T0) -> None:
        self.at = start

    def now(self) -> datetime:
        return self.at

    def advance(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


@dataclass
class Judgement:
    """What a judge returns, as far as the engine reads it."""

    verdict: Verdict
    cost: Cost
    notes: list[str] = field(default_factory=list)
    model: str = "fake"


class FakeOracle:
    """Answers with scripted verdicts (or raises scripted errors), each call costing ORACLE_CALL;
    keeps what it was asked in ``history``."""

    name = "fake"

    def __init__(self, estimate: float = 0.001) -> None:
        self.script: list[Verdict | BaseException] = []
        self.history: list[object] = []
        self.estimate = estimate

    def enqueue(self, *answers: Verdict | BaseException) -> None:
        self.script.extend(answers)

    def estimate_cost(self, oracle_input: object) -> float:
        return self.estimate

    def judge(self, oracle_input: object) -> Judgement:
        self.history.append(oracle_input)
        answer = self.script.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return Judgement(answer, ORACLE_CALL)
