"""The triage inbox: goals that need a person, written when the loop escalates (or a heartbeat finds
a failure), and acted on or dismissed with `goal triage ...`."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path

from ..errors import CorruptFile, GoalNotFound, IllegalTransition
from ..models import (TRIAGE_ID_RE, AttemptBest, BestCheckpoint, Blocker, Escalation, FailingCondition, Goal,
                      HeartbeatMark, StopReason, TriageItem, new_id, now_iso)
from ..rules import lifecycle
from ..storage.store import Store
from ..system import mask
from ..vcs import checkpoint
from . import moves, specs, standings


def new_triage_id() -> str:
    return new_id("tri-")


def failing_conditions(goal: Goal) -> list[FailingCondition]:
    if not goal.history:
        return []
    return [
        FailingCondition(type=c.type, command=c.command, first_failure=c.first_failure[:300])
        for c in goal.history[-1].conditions if not c.passed
    ]


def escalate(goal: Goal, stop_reason: StopReason | None, blocker: Blocker | None, detail: str, now: datetime) -> Goal:
    """Move an active goal to escalated with its stop reason and the id its triage item will get."""
    lifecycle.transition(goal, "escalate", now, stop_reason=stop_reason)
    goal.escalation = Escalation(stop_reason=stop_reason or "stuck", blocker=blocker, detail=detail,
                                 triage_id=new_triage_id(), at=now_iso(now))
    return goal


def file_escalation(store: Store, goal: Goal, now: datetime | None = None, *, why: str | None = None) -> TriageItem:
    """Write the triage item an escalated goal points at (idempotent: an existing one is kept); ``why`` comes
    first among its reasons. Escalations write it with the goal (``with_item``): this repairs a goal
    escalated without one."""
    assert goal.escalation is not None and goal.escalation.triage_id is not None
    triage_id = goal.escalation.triage_id
    if store.path_for(TriageItem, triage_id).exists():
        return store.load(TriageItem, triage_id)
    return store.create(item_of(goal, now, why))


def with_item(now: datetime | None = None, why: str | None = None) -> Callable[[Goal], TriageItem | None]:
    """For ``store.update`` of a goal that the change may escalate: its triage item, so that the goal's
    escalation and its item are one durable step (both on disk or neither, whatever fails)."""
    def companion(goal: Goal) -> TriageItem | None:
        esc = goal.escalation
        return item_of(goal, now, why) if goal.state == "escalated" and esc and esc.triage_id else None

    return companion


def repair(store: Store) -> None:
    """Make every escalation whole again before the inbox is read: settle the items a kill left staged,
    and file the item of a goal escalated without one (by an older version, or its item removed). Best
    effort: a home that cannot be written is read as it is."""
    with suppress(OSError):
        store.settle_pending()
        for s in store.summaries():
            triage_id = s.get("triageId")
            if s.get("state") == "escalated" and isinstance(triage_id, str) and TRIAGE_ID_RE.fullmatch(triage_id) \
                    and not store.path_for(TriageItem, triage_id).exists():
                with suppress(GoalNotFound, CorruptFile):
                    goal = store.load(Goal, s["goalId"])
                    if goal.state == "escalated" and goal.escalation and goal.escalation.triage_id == triage_id:
                        file_escalation(store, goal)


def item_of(goal: Goal, now: datetime | None = None, why: str | None = None) -> TriageItem:
    """The triage item of an escalated goal, masked like the goal file (reasons and hints quote output)."""
    assert goal.escalation is not None and goal.escalation.triage_id is not None
    last = goal.history[-1] if goal.history else None
    stamp = now_iso(now)
    item = TriageItem(
        triage_id=goal.escalation.triage_id,
        goal_id=goal.goal_id,
        objective=goal.objective,
        project_root=goal.project_root,
        stop_reason=goal.escalation.stop_reason,
        blocker=goal.escalation.blocker,
        reasons=([why] if why else []) + (list(last.verdict.reasons) if last and last.verdict else [])
        + (last.decision.notes if last else []),
        hint=goal.last_hint or None,
        failing_conditions=failing_conditions(goal),
        integrity=last.integrity if last else None,
        start_census=list(goal.baseline.census) if goal.baseline else [],
        best_checkpoint=best_checkpoint(goal),
        attempts=attempt_bests(goal),
        spent=goal.spent.model_copy(),
        iterations=goal.spent.iterations,
        created_at=stamp,
        updated_at=stamp,
    )
    return TriageItem.from_doc(mask.data(item.dump()))


def best_checkpoint(goal: Goal) -> BestCheckpoint | None:
    """The checkpoint a person would most likely want back (``checkpoint.best``), unless it is what the files
    already hold: a stuck goal's best is its last iteration, and offering to restore it would restore nothing."""
    best = checkpoint.best(goal)
    if best is None or best.checkpoint is None or best is goal.history[-1] or (
            best.tree_fingerprint and best.tree_fingerprint == goal.history[-1].tree_fingerprint):
        return None
    return BestCheckpoint(iteration=best.number, passing=sum(c.passed for c in best.conditions),
                          conditions=len(best.conditions), checkpoint=best.checkpoint,
                          restore=checkpoint.restore_command(goal.goal_id, best.number))


def attempt_bests(goal: Goal) -> list[AttemptBest]:
    """With parallel attempts: each one's best checkpoint (``checkpoint.best`` of its own iterations)."""
    out = []
    for row in standings.standings(goal):
        best = checkpoint.best(goal.model_copy(update={"history": row.iterations}))
        if best is not None:
            out.append(AttemptBest(attempt=row.attempt, iteration=best.number, passing=standings.passing(best),
                                   conditions=len(best.conditions),
                                   restore=checkpoint.restore_command(goal.goal_id, best.number)))
    return out


def list_items(store: Store, show_all: bool = False) -> list[TriageItem]:
    repair(store)
    items = [i for i in store.iter_all(TriageItem) if show_all or i.status == "open"]
    return sorted(items, key=lambda i: i.created_at, reverse=True)


def show(store: Store, triage_id: str) -> TriageItem:
    """One item, once the escalations a failure left half-done are whole again (``repair``)."""
    store.path_for(TriageItem, triage_id)  # a bad id is refused before anything is read
    repair(store)
    return store.load(TriageItem, triage_id)


def _require_open(item: TriageItem) -> TriageItem:
    if item.status != "open":
        goal = f" (its goal {item.goal_id} was re-opened: `goal status {item.goal_id}`)" if item.goal_id else ""
        raise IllegalTransition(f"triage item {item.triage_id} is already {item.status}{goal}; nothing is left to do "
                                f"with it; `goal triage list --all` shows it")
    return item


def dismiss(store: Store, triage_id: str, keep_checkpoints: bool = False) -> TriageItem:
    """Dismiss an open item; its goal's checkpoint refs go too, unless kept."""
    def change(item: TriageItem) -> TriageItem:
        _require_open(item).status = "dismissed"  # checked under the item's lock (errors.py)
        return item

    item = store.update(TriageItem, triage_id, change)
    if item.goal_id and not keep_checkpoints:
        checkpoint.drop(item.goal_id, item.project_root)
    return item


def accept(store: Store, triage_id: str, now: datetime | None = None) -> Goal:
    """Converge the goal of an item flagged by the tripwires: a person looked at the findings and
    accepts the green run as done. Any other item is refused (lifecycle.py)."""
    now = now or datetime.now(UTC)
    item = _require_open(store.load(TriageItem, triage_id))
    if not item.goal_id:
        raise IllegalTransition(f"triage item {triage_id} has no goal to accept; `goal triage act {triage_id}` "
                                f"makes one from it")

    def change(goal: Goal) -> Goal:
        lifecycle.transition(goal, "accept", now)
        goal.accepted_at = now_iso(now)
        return goal

    goal = store.update(Goal, item.goal_id, change)
    store.update(TriageItem, triage_id, lambda i: setattr(i, "status", "acted"))
    return goal


def act(store: Store, triage_id: str, raise_budget: dict, now: datetime | None = None) -> Goal:
    """Re-open the item's goal (budget flags set its new limits), or make a new goal from an item that
    has none, its conditions the failing checks."""
    now = now or datetime.now(UTC)
    item = _require_open(store.load(TriageItem, triage_id))
    if item.goal_id:
        goal = moves.resume(store, item.goal_id, raise_budget=raise_budget, now=now, via="goal triage act")
    else:
        # With the item's fingerprint on it, the next heartbeat finds this goal working on the failure.
        mark = HeartbeatMark(fingerprint=item.fingerprint, count=item.count,
                             last_seen=item.last_seen or now_iso(now)) if item.fingerprint else None
        spec = specs.GoalSpec(objective=item.objective, project=Path(item.project_root), source="triage",
                              heartbeat=mark, **{k: v for k, v in raise_budget.items() if v is not None})
        for c in item.failing_conditions:
            spec.add_condition(c.type, c.command)
        from . import creation  # making goals (its thread pool...) only here: the Stop hook imports this module

        goal = creation.new_goal(store, spec, now)
    store.update(TriageItem, triage_id, lambda i: setattr(i, "status", "acted"))
    return goal
