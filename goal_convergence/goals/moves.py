"""Moving goals through their life: pause, abandon, resume, and re-opening with new settings."""

from __future__ import annotations

from contextlib import suppress
from datetime import datetime
from pathlib import Path

from ..errors import GoalNotFound, IllegalTransition
from ..models import Goal, TriageItem, now_iso
from ..rules import budget, lifecycle
from ..storage.store import Store
from ..system import clock
from ..vcs import checkpoint, snapshot, worktree
from . import lookup, notify
from .settings import change_settings


def move(store: Store, goal_id: str, action: str, now: datetime | None = None, *,
         keep_checkpoints: bool = False) -> Goal:
    """pause or abandon a goal (resume has its own function: it binds a session and may raise a budget).
    An abandoned goal's checkpoint refs are removed unless kept."""
    now = now or clock.now()
    goal = store.update(Goal, goal_id, lambda g: lifecycle.transition(g, action, now))
    if action == "abandon":
        worktree.sweep(Path(goal.project_root), goal.goal_id, worktree.ATTEMPTS)  # a killed run's parallel attempts
        if not keep_checkpoints:
            checkpoint.drop(goal.goal_id, goal.project_root)
        snapshot.forget(store.root, goal.goal_id)
        notify.goal_ended(store, goal, now)
    return goal


def reconfigure(store: Store, goal_id: str, given: dict, via: str, now: datetime | None = None) -> Goal:
    """Apply flags given with an existing goal (`goal run ID --max-iterations 25 --oracle conditions`).
    An escalated goal is re-opened with them: that is what they were given for."""
    now = now or clock.now()
    if store.load(Goal, goal_id).state == "escalated":
        return resume(store, goal_id, raise_budget=given, via=via, now=now)

    def change(goal: Goal) -> Goal:
        if goal.state in ("converged", "failed"):
            raise IllegalTransition(f"goal {goal_id} is {goal.state}, so its settings no longer matter; start a new "
                                    f"goal with `goal run OBJECTIVE ...`")
        return change_settings(goal, given, via, now)

    return store.update(Goal, goal_id, change)


def check_settings(store: Store, goal_id: str, given: dict, via: str) -> None:
    """Refuse the flags ``reconfigure`` would refuse for what they are, changing nothing (a copy takes them):
    `goal run` checks them before it claims the goal, and applies them once it holds the claim."""
    change_settings(store.load(Goal, goal_id).model_copy(deep=True), dict(given), via, clock.now())


def resume(store: Store, goal_id: str, *, session_id: str | None = None, raise_budget: dict | None = None,
           now: datetime | None = None, via: str = "goal resume", agent: str = "claude-code") -> Goal:
    """Carry on with a goal: re-open a paused or escalated one, and bind it to ``session_id``,
    a session of ``agent``.

    An active goal is simply re-bound (that is how a goal moves to a new session). An escalated goal
    whose budget is still spent needs a raised budget first, or it would stop again at once. Its
    triage item is resolved: the goal is being worked on again, and it escalates anew if it must.
    """
    now = now or clock.now()
    if session_id:
        lookup.refuse_second_goal_in_session(store, session_id, except_id=goal_id)
    reopened: list[str] = []

    def change(goal: Goal) -> Goal:
        if raise_budget:
            change_settings(goal, raise_budget, via, now)
        if goal.state == "escalated" and goal.escalation and goal.escalation.triage_id:
            reopened.append(goal.escalation.triage_id)
        if goal.state != "active":
            lifecycle.transition(goal, "resume", now)
        spent = budget.exhausted(goal)
        if spent:
            command = "goal run" if via == "goal run" else "goal resume"
            raise IllegalTransition(f"goal {goal.goal_id} has spent its budget ({spent}); raise it, e.g. "
                                    f"`{command} {goal.goal_id} {_raised_flag(goal, spent)}`")
        if session_id and session_id != goal.session_id:
            # Taken over from another session, which may have died without its SessionEnd: its clock
            # since the last iteration is idle time as likely as work, so it is not charged.
            budget.run_clock(goal, now, False)
        budget.accrue(goal, now)
        goal.session_id = session_id or goal.session_id
        if session_id:
            goal.agent = agent  # type: ignore[assignment]
        budget.run_clock(goal, now, bool(session_id))
        return goal

    goal = store.update(Goal, goal_id, change)
    for triage_id in reopened:
        resolve_triage(store, triage_id, now)
    return goal


def resolve_triage(store: Store, triage_id: str, now: datetime) -> None:
    """Mark an open triage item acted on (a goal re-opened by any route); a missing one needs nothing."""
    def change(item: TriageItem) -> TriageItem:
        if item.status == "open":
            item.status, item.updated_at = "acted", now_iso(now)
        return item

    with suppress(GoalNotFound):
        store.update(TriageItem, triage_id, change)


def _raised_flag(goal: Goal, spent: str) -> str:
    """The flag that lifts the limit a goal has reached, with a value that leaves room to work."""
    s = goal.spent
    if spent == "ceiling":
        return f"--max-iterations {s.iterations + 10}"
    if spent == "timeout":
        return f"--max-duration {int(s.active_seconds // 60) + 60}m"
    if goal.budget.max_tokens is not None and s.tokens >= goal.budget.max_tokens:
        return f"--max-tokens {s.tokens * 2}"
    return f"--max-dollars {s.dollars + 10:.2f}"
