"""The oracle's verdict on an iteration, and the decision the loop takes from it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import Blocker, ConditionType, Model, StopReason


class ConditionResult(Model):
    type: ConditionType
    passed: bool
    output: str = ""


class Unfixable(Model):
    reason: str = Field(min_length=1)
    evidence: list[str] = Field(default_factory=list)


class TaskChanges(Model):
    """The judge's changes to the goal's plan: tasks to add (titles) and tasks it found done (ids)."""

    add: list[str] = Field(default_factory=list, description="Titles of new tasks, each a short step the maker must "
                                                            "still take.")
    complete: list[str] = Field(default_factory=list, description="Ids of open tasks (t1, t2, ...) now done.")


class Verdict(Model):
    """The oracle's answer for one iteration."""

    converged: bool = Field(description="The oracle's own judgement; it can never pass a red condition.")
    condition_results: list[ConditionResult] = Field(default_factory=list)
    reasons: list[str] = Field(default_factory=list)
    next_hint: str = Field(default="", description="Concrete next step for the maker: file, function, failing test, "
                                                   "what to do.")
    confidence: float = Field(default=0.5, ge=0, le=1)
    unfixable: Unfixable | None = None
    tasks: TaskChanges | None = Field(default=None, exclude_if=lambda v: v is None,
                                      description="Changes to the goal's plan, when it keeps one.")
    findings_cleared: list[str] = Field(
        default_factory=list, exclude_if=lambda v: not v,
        description="Ids of the integrity findings (f1, f2, ...) read in the code and found to be a legitimate part "
                    "of the fix. A finding left out keeps the goal from converging, whatever `converged` says.")


class Decision(Model):
    action: Literal["converge", "continue", "stop", "recheck"]
    stop_reason: StopReason | None = None
    hint: str = ""
    blocker: Blocker | None = None
    notes: list[str] = Field(default_factory=list)
