"""The goal state machine. An illegal move is an error naming the state and the move.

active and paused go back and forth; an active goal converges or escalates; an active or paused
one can be abandoned (failed); an escalated goal becomes active again only when it is resumed,
explicitly or by a triage action. A goal escalated as flagged (a green run whose tripwire findings no
model judge weighed) converges when a person accepts it. Converged and failed are final.
"""

from __future__ import annotations

from datetime import datetime

from ..errors import IllegalTransition
from ..models import Goal, StopReason, now_iso
from . import budget

MOVES: dict[tuple[str, str], str] = {
    ("active", "pause"): "paused",
    ("paused", "resume"): "active",
    ("escalated", "resume"): "active",
    ("escalated", "accept"): "converged",
    ("active", "converge"): "converged",
    ("active", "escalate"): "escalated",
    ("active", "abandon"): "failed",
    ("paused", "abandon"): "failed",
}
ACTIONS = ("pause", "resume", "converge", "escalate", "abandon", "accept")

# The stop reason each ending records; an escalation names its own, one of the budget or judge ones.
_FIXED_REASON: dict[str, StopReason] = {"converged": "converged", "failed": "cancelled"}
ESCALATION_REASONS = ("unfixable", "stuck", "timeout", "ceiling", "budget-exhausted", "judge-error", "tampered",
                      "flagged")

_HOW_TO = {
    "paused": "run `goal resume` to carry on, or `goal abandon` to end it",
    "escalated": "see `goal triage list`; `goal resume ID` (with a raised budget) re-opens it",
    "converged": "it is done; start a new goal with `goal new`",
    "failed": "it was abandoned; start a new goal with `goal new`",
    "active": "it is already running",
}


def transition(goal: Goal, move: str, now: datetime, stop_reason: StopReason | None = None) -> Goal:
    """Apply ``move`` to ``goal`` in place. Time spent active is charged before the state changes."""
    target = MOVES.get((goal.state, move))
    if target is None:
        if move not in ACTIONS:
            raise IllegalTransition(f"cannot {move} goal {goal.goal_id}: {move!r} is not a move "
                                    f"(the moves are {', '.join(ACTIONS)})")
        raise IllegalTransition(f"cannot {move} goal {goal.goal_id}: it is {goal.state} ({_HOW_TO[goal.state]})")
    if move == "accept" and goal.stop_reason != "flagged":
        raise IllegalTransition(f"cannot accept goal {goal.goal_id}: only a green run flagged for a person can be "
                                f"accepted, and it stopped as {goal.stop_reason}; `goal resume {goal.goal_id}` "
                                f"re-opens it")
    if target == "escalated" and stop_reason not in ESCALATION_REASONS:
        raise IllegalTransition(f"cannot escalate goal {goal.goal_id} with stop reason {stop_reason!r}: "
                                f"an escalation needs one of {', '.join(ESCALATION_REASONS)}")
    budget.accrue(goal, now)
    budget.run_clock(goal, now, False)
    goal.state = target  # type: ignore[assignment]
    if target == "active":
        goal.stop_reason = None
        goal.escalation = None
        # What a session spent while the goal was not active was not spent on it: the next read of
        # its transcript starts over, skipping the messages from before now (claude_code/hooks.py).
        goal.transcript_offsets = {}
        goal.transcript_since = now_iso(now)
    elif target != "paused":
        goal.stop_reason = _FIXED_REASON.get(target, stop_reason)
    return goal
