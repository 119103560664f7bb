"""A goal whose file or baseline was edited outside goal-convergence (system/seal.py): it never
converges. The loop escalates it with the stop reason "tampered", an integrity issue naming what
changed, and the goal's sealed terms put back, so that a person who resumes it runs the goal as it
was made, not as the edit left it."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from pydantic import ValidationError

from ..models import Cost, Decision, Goal, Integrity, IntegrityIssue, Iteration, now_iso
from ..system import seal

KIND = "goal-tampered"


def restored(home: Path, goal: Goal) -> tuple[Goal, bool]:
    """A copy of ``goal`` with its sealed terms back and no longer marked tampered, and whether the
    terms could be put back (they are unknown for a goal from before the seal, or when removed)."""
    kept = seal.sealed_terms(home, goal.goal_id)
    doc = goal.dump()
    try:
        return Goal.from_doc({**doc, **(kept or {})}), kept is not None
    except ValidationError:  # a copy we sealed that no longer validates: keep the goal as found
        return Goal.from_doc(doc), False


def reopened(home: Path, goal: Goal) -> Goal:
    """The goal as the escalation starts from, under its lock: its terms back and active, whatever
    state its file claims (a file that says converged or paused says so falsely)."""
    if not goal.tampered:
        return goal  # escalated by another process meanwhile
    fresh = restored(home, goal)[0]
    fresh.state = "active"
    return fresh


def record(goal: Goal, restored_terms: bool, now: datetime) -> Iteration:
    """The iteration that escalates a tampered goal: its maker's work (already charged), no checks, the issue."""
    detail = goal.tampered or "the goal file was edited outside goal-convergence"
    pending = goal.pending
    number = pending.number if pending and pending.number > goal.spent.iterations else goal.spent.iterations + 1
    after = (f"its sealed terms were restored, so `goal resume {goal.goal_id}` runs it as it was made"
             if restored_terms else
             f"its terms could not be restored: check them with `goal status {goal.goal_id}` before resuming it")
    decision = Decision(action="stop", stop_reason="tampered", notes=[detail, after])
    return Iteration(number=number, started_at=pending.started_at if pending else now_iso(now), ended_at=now_iso(now),
                     maker_summary=pending.maker_summary if pending else None, decision=decision,
                     maker_cost=pending.maker_cost if pending else Cost(),
                     integrity=Integrity(issues=[IntegrityIssue(kind=KIND, subject="goal file", detail=detail,
                                                                since=number)]))


def overrule(decision: Decision, guard: Integrity | None) -> Decision:
    """A run whose baseline manifest is tampered stops as tampered, whatever else was decided."""
    found = [i.detail for i in (guard.issues if guard else []) if i.kind == KIND]
    if not found:
        return decision
    return Decision(action="stop", stop_reason="tampered", notes=[*decision.notes, *found][-2:])
