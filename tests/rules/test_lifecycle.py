"""Every move of the goal state machine, legal and illegal."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import product
from typing import get_args

import pytest

from goal_convergence.errors import IllegalTransition
from goal_convergence.models import Escalation, now_iso
from goal_convergence.models.goal import GoalState
from goal_convergence.rules import lifecycle

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

# The legal moves, spelled out independently of lifecycle.MOVES so a change to either shows up here.
LEGAL = {
    ("active", "pause"): ("paused", None),
    ("paused", "resume"): ("active", None),
    ("escalated", "resume"): ("active", None),
    ("active", "converge"): ("converged", "converged"),
    ("active", "escalate"): ("escalated", "stuck"),
    ("active", "abandon"): ("failed", "cancelled"),
    ("paused", "abandon"): ("failed", "cancelled"),
    ("escalated", "accept"): ("converged", "converged"),  # a flagged goal only (below)
}
ALL = list(product(get_args(GoalState), lifecycle.ACTIONS))
ILLEGAL = [pair for pair in ALL if pair not in LEGAL]


def in_state(make_goal, state):
    goal = make_goal(state=state)
    if state == "escalated":
        goal.stop_reason = "flagged"
        goal.escalation = Escalation(stop_reason="flagged", at=now_iso(T0))
    elif state in ("converged", "failed"):
        goal.stop_reason = {"converged": "converged", "failed": "cancelled"}[state]
    return goal


def test_the_table_is_the_one_spelled_out_here():
    assert lifecycle.MOVES == {k: v[0] for k, v in LEGAL.items()}
    assert len(ALL) == 30 and len(ILLEGAL) == 22


def test_only_a_goal_escalated_as_flagged_can_be_accepted(make_goal):
    goal = in_state(make_goal, "escalated")
    goal.stop_reason = "ceiling"
    before = goal.model_copy(deep=True)
    with pytest.raises(IllegalTransition, match="only a green run flagged for a person can be accepted.*ceiling"):
        lifecycle.transition(goal, "accept", T0)
    assert goal == before


@pytest.mark.parametrize(("state", "move"), list(LEGAL))
def test_legal_moves(make_goal, state, move):
    goal = in_state(make_goal, state)
    result = lifecycle.transition(goal, move, T0, stop_reason="stuck" if move == "escalate" else None)
    target, reason = LEGAL[(state, move)]
    assert result is goal and goal.state == target and goal.stop_reason == reason
    assert goal.active_since is None
    if target == "active":
        assert goal.escalation is None


@pytest.mark.parametrize(("state", "move"), ILLEGAL)
def test_illegal_moves_name_the_state_and_the_move(make_goal, state, move):
    goal = in_state(make_goal, state)
    before = goal.model_copy(deep=True)
    with pytest.raises(IllegalTransition) as raised:
        lifecycle.transition(goal, move, T0, stop_reason="stuck")
    message = str(raised.value)
    assert f"cannot {move} goal {goal.goal_id}" in message and f"it is {state}" in message
    assert goal == before, "a refused move changes nothing"


def test_an_unknown_move_lists_the_moves(make_goal):
    with pytest.raises(IllegalTransition, match="'explode' is not a move.*pause, resume, converge, escalate, abandon"):
        lifecycle.transition(make_goal(), "explode", T0)


@pytest.mark.parametrize("reason", [None, "converged", "cancelled"])
def test_an_escalation_needs_an_escalation_reason(make_goal, reason):
    goal = make_goal()
    with pytest.raises(IllegalTransition, match="cannot escalate .* stop reason"):
        lifecycle.transition(goal, "escalate", T0, stop_reason=reason)
    assert goal.state == "active"


@pytest.mark.parametrize("reason", lifecycle.ESCALATION_REASONS)
def test_an_escalation_keeps_its_reason(make_goal, reason):
    goal = lifecycle.transition(make_goal(), "escalate", T0, stop_reason=reason)
    assert (goal.state, goal.stop_reason) == ("escalated", reason)


@pytest.mark.parametrize("move", ["converge", "abandon"])
def test_an_ending_records_its_own_reason_whatever_is_passed(make_goal, move):
    goal = lifecycle.transition(make_goal(), move, T0, stop_reason="stuck")
    assert goal.stop_reason == {"converge": "converged", "abandon": "cancelled"}[move]


def test_active_time_is_charged_when_the_state_changes_and_paused_time_is_not(make_goal):
    goal = make_goal(active_since=now_iso(T0))
    goal.spent.active_seconds = 5.0
    lifecycle.transition(goal, "pause", T0 + timedelta(seconds=90))
    assert goal.spent.active_seconds == pytest.approx(95.0)
    lifecycle.transition(goal, "resume", T0 + timedelta(hours=3))
    assert goal.spent.active_seconds == pytest.approx(95.0)
    assert goal.active_since is None  # the clock restarts only when a maker attaches
