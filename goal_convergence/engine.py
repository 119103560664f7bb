"""One iteration of the loop: check → judge → decide (pure) → persist → act.

Used by the Claude Code Stop hook (the session is the maker) and by the headless runner. The
maker's work is recorded as the pending iteration before the checks run, and the iteration record
is persisted (keyed by its number) before anyone acts on it, so a crash at any point loses at most
the iteration in flight and never counts one twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Callable

from . import budget, conditions, integrity, lifecycle, notify, oracle, tree, triage
from .decide import Evidence, decide
from .errors import InvalidInput, OracleError
from .models import (
    ConditionEvidence,
    Cost,
    Decision,
    Escalation,
    Goal,
    Integrity,
    Iteration,
    Pending,
    Rerun,
    Verdict,
    now_iso,
)
from .store import Store

MAX_RECHECKS = 2


@dataclass
class MakerReport:
    """What the maker did since the last iteration."""

    summary: str | None = None
    cost: Cost = field(default_factory=Cost)
    model: str | None = None
    transcript_offsets: dict[str, int] = field(default_factory=dict)
    failed: bool = False
    session_id: str | None = None  # the headless claude maker's session, resumed next time


@dataclass
class Outcome:
    goal: Goal
    decision: Decision
    iteration: Iteration | None = None
    triage_id: str | None = None


def _check_independence(goal: Goal, model: str | None) -> None:
    if oracle.judged_by_maker_model(goal.oracle, model):
        raise InvalidInput(
            f"goal {goal.goal_id}: the maker runs {model}, the oracle's own model, so the judge is not independent; "
            f"switch the session's model (/model) or re-create the goal with another --oracle-model"
        )


def record_maker(store: Store, goal_id: str, report: MakerReport, *, detach: bool = False,
                 now: datetime | None = None) -> Goal:
    """Charge the maker's work to the goal and hold it as the pending iteration.

    ``detach`` also stops the active clock (the session ended; the goal stays active and bound).
    """
    now = now or datetime.now(UTC)

    def change(goal: Goal) -> Goal:
        _check_independence(goal, report.model)
        budget.accrue(goal, now)
        goal.spent.maker_dollars += report.cost.dollars
        goal.spent.maker_tokens += report.cost.tokens
        goal.transcript_offsets = {**goal.transcript_offsets, **report.transcript_offsets}
        if report.model:
            goal.maker.model = report.model
        if report.session_id:
            goal.maker.session_id = report.session_id
        if goal.state == "active":
            pending = goal.pending or Pending(number=goal.spent.iterations + 1, started_at=now_iso(now))
            pending.maker_cost = pending.maker_cost + report.cost
            pending.maker_summary = report.summary if report.summary is not None else pending.maker_summary
            pending.maker_failed = report.failed
            goal.pending = pending
        goal.active_since = None if detach else (goal.active_since or now_iso(now))
        return goal

    return store.update(Goal, goal_id, change)


def _confirm_flips(goal: Goal, found: list[ConditionEvidence], tree_fp: str, root: Path) -> list[str]:
    """Re-run, once, each condition that flipped although no file changed; pass only if both runs pass."""
    if not goal.history or goal.history[-1].tree_fingerprint != tree_fp:
        return []
    before = {c.index: c.passed for c in goal.history[-1].conditions}
    flipped = [e for e in found if e.index in before and before[e.index] != e.passed]
    if not flipped:
        return []
    again = {e.index: e for e in conditions.run_conditions(goal.stopping_conditions, root,
                                                           only=[e.index for e in flipped])}
    notes = []
    for ev in flipped:
        second = again[ev.index]
        ev.rerun = Rerun(passed=second.passed, exit_code=second.exit_code,
                         duration_seconds=second.duration_seconds, fingerprint=second.fingerprint)
        first = ev.passed
        ev.passed = first and second.passed
        notes.append(
            f"condition [{ev.index}] flipped ({'pass' if before[ev.index] else 'fail'} -> {'pass' if first else 'fail'}) "
            f"with no file change; re-run {'passed' if second.passed else 'failed'}: counted as "
            f"{'passing' if ev.passed else 'failing (flaky)'}"
        )
    return notes


def _charge(goal: Goal, number: int, oracle_cost: Cost, now: datetime) -> None:
    budget.accrue(goal, now)
    goal.spent.iterations = max(goal.spent.iterations, number)
    goal.spent.oracle_dollars += oracle_cost.dollars
    goal.spent.oracle_tokens += oracle_cost.tokens


def _judge(goal: Goal, found: list[ConditionEvidence], summary: str | None, root: Path,
           preview: Goal, guard: Integrity | None) -> tuple[Verdict | None, Cost, str | None, bool, list[str]]:
    """Ask the oracle, unless the call could not be paid for or the integrity guard already refuses
    the run (no verdict could change that). Returns verdict, cost, error, unaffordable, notes."""
    if guard is not None and guard.blocks and all(e.passed for e in found):
        return None, Cost(), None, False, ["the oracle was not asked: the integrity guard refuses this run"]
    try:
        judge = oracle.get_oracle(goal.oracle, goal, rerun=lambda i: conditions.run_condition(
            goal.stopping_conditions[i], i, root))
        oracle_input = oracle.build_input(goal, found, summary, guard)
        left = budget.dollars_left(preview)
        if left is not None and judge.estimate_cost(oracle_input) > left:
            return None, Cost(), None, True, []
        judgement = judge.judge(oracle_input)
    except OracleError as exc:  # a judge error still costs what its failed attempts spent
        return None, getattr(exc, "cost", None) or Cost(), str(exc), False, []
    return judgement.verdict, judgement.cost, None, False, list(judgement.notes)


def run_iteration(store: Store, goal_id: str, maker: MakerReport | None = None, *, now: datetime | None = None,
                  stuck_cap: int | None = None,
                  on_progress: Callable[[list[tuple[int, str, float, bool | None]]], None] | None = None) -> Outcome:
    """Run one whole iteration for an active goal and persist it. ``maker`` is charged first."""
    clock: Callable[[], datetime] = (lambda: now) if now else (lambda: datetime.now(UTC))
    goal = record_maker(store, goal_id, maker, now=clock()) if maker else store.load(Goal, goal_id)
    if goal.state != "active":
        return Outcome(goal, Decision(action="stop", stop_reason=goal.stop_reason))
    if goal.pending is None:  # e.g. `goal run` resumed after the maker was charged elsewhere
        goal = record_maker(store, goal_id, MakerReport(), now=clock())
    pending = goal.pending
    assert pending is not None
    root = Path(goal.project_root)
    notes: list[str] = []
    oracle_cost = Cost()  # every oracle call of the iteration, re-checks included
    for _ in range(MAX_RECHECKS + 1):
        found = conditions.run_conditions(goal.stopping_conditions, root, on_progress=on_progress)
        tree_fp = tree.tree_fingerprint(root)
        flip_notes = _confirm_flips(goal, found, tree_fp, root)
        guard = integrity.inspect(store.root, goal, found, pending.number, green=all(e.passed for e in found))
        preview = goal.model_copy(deep=True)
        _charge(preview, pending.number, oracle_cost, clock())
        verdict, call_cost, judge_error, unaffordable, judge_notes = _judge(
            goal, found, pending.maker_summary, root, preview, guard)
        _charge(preview, pending.number, call_cost, clock())
        oracle_cost = oracle_cost + call_cost
        evidence = Evidence(conditions=found, tree_fingerprint=tree_fp,
                            tree_after_judge=tree.tree_fingerprint(root) if verdict else None,
                            maker_summary=pending.maker_summary, maker_failed=pending.maker_failed,
                            judge_error=judge_error, unaffordable=unaffordable, integrity=guard,
                            notes=notes + flip_notes + judge_notes)
        decision = decide(preview, evidence, verdict, clock(), stuck_cap=stuck_cap)
        if decision.action != "recheck":
            break
        notes = decision.notes
    else:
        decision = Decision(action="continue", hint="The files kept changing while the checks ran; "
                            "let them settle and stop again.", notes=decision.notes)
    record = Iteration(
        number=pending.number, started_at=pending.started_at, ended_at=now_iso(clock()),
        maker_summary=pending.maker_summary, conditions=found, tree_fingerprint=tree_fp, verdict=verdict,
        judge_error=judge_error, decision=decision, maker_cost=pending.maker_cost, oracle_cost=oracle_cost,
        integrity=guard,
    )
    return _persist(store, goal_id, record, decision, clock())


def _persist(store: Store, goal_id: str, record: Iteration, decision: Decision, now: datetime) -> Outcome:
    triage_id: list[str] = []

    def change(goal: Goal) -> Goal:
        if goal.spent.iterations >= record.number:  # already recorded: a retry after a crash
            return goal
        _charge(goal, record.number, record.oracle_cost, now)
        goal.history.append(record)
        goal.pending = None
        if goal.state != "active":  # paused or abandoned while the iteration ran: keep the record only
            return goal
        if decision.action == "converge":
            lifecycle.transition(goal, "converge", now)
        elif decision.action == "stop":
            triage_id.append(_escalate(goal, decision, now))
        return goal

    goal = store.update(Goal, goal_id, change)
    if triage_id:
        triage.file_escalation(store, goal, now)
    notify.goal_ended(store, goal, now)  # once the goal and its triage item are on disk; once per end
    return Outcome(goal, decision, record, triage_id[0] if triage_id else None)


def stop_if_exhausted(store: Store, goal_id: str, now: datetime | None = None) -> Outcome | None:
    """Before the maker starts another iteration: escalate a goal whose budget is already spent."""
    now = now or datetime.now(UTC)
    goal = store.load(Goal, goal_id)
    preview = goal.model_copy(deep=True)
    budget.accrue(preview, now)
    reason = budget.exhausted(preview)
    if goal.state != "active" or reason is None:
        return None
    decision = Decision(action="stop", stop_reason=reason, hint=goal.last_hint,
                        notes=[f"the {reason} limit was reached before the next iteration"])
    triage_id: list[str] = []
    goal = store.update(Goal, goal_id, lambda g: triage_id.append(_escalate(g, decision, now)))
    triage.file_escalation(store, goal, now)
    notify.goal_ended(store, goal, now)
    return Outcome(goal, decision, None, triage_id[0])


def _escalate(goal: Goal, decision: Decision, now: datetime) -> str:
    """Move an active goal to escalated with its stop reason; returns the id its triage item will get."""
    lifecycle.transition(goal, "escalate", now, stop_reason=decision.stop_reason)
    triage_id = triage.new_triage_id()
    goal.escalation = Escalation(stop_reason=decision.stop_reason or "stuck", blocker=decision.blocker,
                                 detail="; ".join(decision.notes[-2:]), triage_id=triage_id, at=now_iso(now))
    return triage_id


def attach(store: Store, goal_id: str, session_id: str | None = None, now: datetime | None = None) -> Goal:
    """A maker starts working on the goal: start its active clock (and bind a session, if given)."""
    now = now or datetime.now(UTC)

    def change(goal: Goal) -> Goal:
        budget.accrue(goal, now)
        if goal.state == "active":
            goal.active_since = goal.active_since or now_iso(now)
            goal.session_id = session_id or goal.session_id
        return goal

    return store.update(Goal, goal_id, change)


def detach(store: Store, goal_id: str, now: datetime | None = None) -> Goal:
    """The maker stopped working on the goal: charge the active time and stop the clock."""
    now = now or datetime.now(UTC)

    def change(goal: Goal) -> Goal:
        budget.accrue(goal, now)
        goal.active_since = None
        return goal

    return store.update(Goal, goal_id, change)
