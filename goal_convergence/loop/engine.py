"""One iteration of the loop: check → judge → decide (pure) → persist → act.

Used by the agents' end-of-turn hooks (the session is the maker) and by the headless runner. The maker's work is
recorded as the pending iteration before the checks run, and the iteration record is persisted (keyed by its
number) before anyone acts on it, so a crash at any point loses at most the iteration in flight, never counts one twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from .. import oracle
from ..checks import conditions
from ..errors import JUDGE_ERRORS, InvalidInput
from ..goals import notify, tampering, triage
from ..guard import delivered, integrity
from ..models import ConditionEvidence, Cost, Decision, Goal, Integrity, Iteration, Pending, Rerun, Verdict, now_iso
from ..rules import budget, lifecycle, plan, progress
from ..rules.decide import Evidence, decide
from ..storage import cost
from ..storage.store import Store
from ..system import clock, mask
from ..vcs import checkpoint, snapshot, tree

MAX_RECHECKS = 2
# How one of several attempts can end on its own (attempts.py): the others may still get there. A spent budget,
# or a judge that cannot judge (the same judge for all), is the goal's and ends them all.
ATTEMPT_STOPS = ("stuck", "unfixable")


@dataclass(frozen=True)
class Edges:
    """What an iteration touches besides the goal's own files: the real parts unless a test hands in fakes."""

    run_conditions: Callable[..., list[ConditionEvidence]] = conditions.run_conditions
    run_condition: Callable[..., ConditionEvidence] = conditions.run_condition
    fingerprint: Callable[[Path], str] = tree.tree_fingerprint
    checkpoint: Callable[[Goal, int], checkpoint.Taken] = checkpoint.take
    inspect: Callable[..., Integrity | None] = integrity.inspect
    watch: Callable[[Path], Callable[[], list[str]]] = delivered.watch
    get_oracle: Callable[..., Any] = oracle.get_oracle
    build_input: Callable[..., Any] = oracle.build_input
    file_escalation: Callable[..., Any] = triage.file_escalation
    announce: Callable[..., Any] = notify.goal_ended
    now: Callable[[], datetime] = clock.now


@dataclass
class MakerReport:
    """What the maker did since the last iteration."""

    summary: str | None = None
    cost: Cost = field(default_factory=Cost)
    model: str | None = None
    transcript_offsets: dict[str, int] = field(default_factory=dict)
    failed: bool = False
    session_id: str | None = None  # the headless claude maker's session, resumed next time
    unpriced: bool = False  # some of the spend had no price: counted in tokens, and the goal held to a token budget


@dataclass(frozen=True)
class Attempt:
    """One of several makers racing on a goal (attempts.py): its number, and whether other attempts still work,
    so that its own end (ATTEMPT_STOPS) ends it alone and the goal carries on."""

    number: int
    others: bool = False


@dataclass
class Outcome:
    goal: Goal
    decision: Decision
    iteration: Iteration | None = None

    @property
    def triage_id(self) -> str | None:
        """The triage item of the goal's escalation, when it is escalated."""
        esc = self.goal.escalation
        return esc.triage_id if esc and self.goal.state == "escalated" else None


@dataclass
class Judged:
    """What asking the oracle gave: a verdict, or why there is none (and what the asking cost)."""

    verdict: Verdict | None = None
    cost: Cost = field(default_factory=Cost)
    looked: bool = True  # the judge could look at (and so write) the tree: the conditions judge cannot
    error: str | None = None
    unaffordable: bool = False  # the call could not have been paid for within the budget, so none was made
    notes: list[str] = field(default_factory=list)
    by: str | None = None  # who gave the verdict (Judgement.model): the report names that judge, not the goal's


def _check_independence(goal: Goal, model: str | None) -> None:
    if oracle.judged_by_maker_model(goal.oracle, model):
        raise InvalidInput(
            f"goal {goal.goal_id}: the maker runs {model}, the oracle's own model, so the judge is not independent; "
            f"switch the session's model (/model) or re-create the goal with another --oracle-model")


def check_oracle(goal: Goal, edges: Edges | None = None) -> None:
    """Set the goal's oracle up without asking it anything, so a headless run that could never be
    judged stops before its maker spends anything (raises OracleUnavailable or PriceUnknown)."""
    (edges or Edges()).get_oracle(goal.oracle, goal)


# What the maker did, or how to find out from the goal as it is on disk: a transcript read from the
# stored offsets must happen under the goal's lock, or two hooks would charge the same bytes.
MakerWork = MakerReport | Callable[[Goal], MakerReport]


def repair_pending(goal: Goal) -> None:
    """A pending iteration numbered at or below the iterations recorded (a second runner's, or a
    hand-edited file) could never be recorded, so the loop would judge it forever: it becomes the
    next iteration, its maker's work (already charged) kept."""
    if goal.pending is not None and goal.pending.number <= goal.spent.iterations:
        goal.pending.number = goal.spent.iterations + 1


def record_maker(store: Store, goal_id: str, work: MakerWork, *, detach: bool = False,
                 now: datetime | None = None, pend: bool = True) -> Goal:
    """Charge the maker's work to the goal and hold it as the pending iteration (not with ``pend`` False:
    another writer's iteration is in flight). ``detach`` also stops the active clock (the session ended)."""
    now = now or clock.now()

    def change(goal: Goal) -> Goal:
        report = work(goal) if callable(work) else work
        if pend:
            _check_independence(goal, report.model)
        _charge_maker(goal, report, now, detach, pend)
        return goal

    return store.update(Goal, goal_id, change)


def _charge_maker(goal: Goal, report: MakerReport, now: datetime, detach: bool, pend: bool = True) -> None:
    budget.accrue(goal, now)
    repair_pending(goal)
    goal.spent.maker_dollars += report.cost.dollars
    goal.spent.maker_tokens += report.cost.tokens
    if report.unpriced:
        budget.hold_to_tokens(goal, cost.dearest_output())
    # Read under this lock from the offsets stored here, so they only move on from what was charged.
    goal.transcript_offsets = {**goal.transcript_offsets, **report.transcript_offsets}
    if report.transcript_offsets:
        goal.transcript_since = None  # the skip it asked for is done: the files read are known now
    if report.model and pend:
        goal.maker.model = report.model
    if report.session_id:
        goal.maker.session_id = report.session_id
    if goal.state == "active" and pend:
        pending = goal.pending or Pending(number=goal.spent.iterations + 1, started_at=now_iso(now))
        pending.maker_cost = pending.maker_cost + report.cost
        pending.maker_summary = mask.text(report.summary) if report.summary is not None else pending.maker_summary
        pending.maker_failed = report.failed
        goal.pending = pending
    # Only an active goal runs a clock: a goal paused while its maker worked must not restart it.
    budget.run_clock(goal, now, not detach and goal.state == "active")


def _confirm_flips(goal: Goal, found: list[ConditionEvidence], tree_fp: str, root: Path, edges: Edges) -> list[str]:
    """Re-run, once, each condition that flipped although no file changed; pass only if both runs pass."""
    if not goal.history or goal.history[-1].tree_fingerprint != tree_fp:
        return []
    before = {c.index: c.passed for c in goal.history[-1].conditions}
    flipped = [e for e in found if e.index in before and before[e.index] != e.passed]
    if not flipped:
        return []
    again = {e.index: e for e in edges.run_conditions(goal.stopping_conditions, root, only=[e.index for e in flipped])}
    notes = []
    for ev in flipped:
        second = again[ev.index]
        ev.rerun = Rerun(passed=second.passed, exit_code=second.exit_code,
                         duration_seconds=second.duration_seconds, fingerprint=second.fingerprint)
        first = ev.passed
        ev.passed = first and second.passed
        notes.append(
            f"condition [{ev.index}] flipped ({'pass' if before[ev.index] else 'fail'} -> "
            f"{'pass' if first else 'fail'}) "
            f"with no file change; re-run {'passed' if second.passed else 'failed'}: counted as "
            f"{'passing' if ev.passed else 'failing (flaky)'}"
        )
    return notes


def copy_to_charge(goal: Goal) -> Goal:
    """A copy to charge in advance (or show charged). Charging sets the goal's own fields and its
    counters only, so the rest (a history of 1,000 iterations) is shared, not deep-copied at every stop."""
    return goal.model_copy(update={"spent": goal.spent.model_copy()})


def _charge(goal: Goal, number: int, oracle_cost: Cost, now: datetime) -> None:
    budget.accrue(goal, now)
    goal.spent.iterations = max(goal.spent.iterations, number)
    goal.spent.oracle_dollars += oracle_cost.dollars
    goal.spent.oracle_tokens += oracle_cost.tokens


def _judge(goal: Goal, found: list[ConditionEvidence], summary: str | None, root: Path,
           preview: Goal, guard: Integrity | None, edges: Edges) -> Judged:
    """Ask the oracle, unless the call could not be paid for or the integrity guard already refuses
    the run (no verdict could change that). Whatever keeps it from judging is a judge error (errors.py)."""
    if guard is not None and guard.blocks and all(e.passed for e in found):
        return Judged(notes=["the oracle was not asked: the integrity guard refuses this run"])
    try:
        judge = edges.get_oracle(goal.oracle, goal, rerun=lambda i: edges.run_condition(
            goal.stopping_conditions[i], i, root))
        looked = getattr(judge, "reads_tree", True)
        oracle_input = edges.build_input(goal, found, summary, guard, diff=looked)
        left = budget.dollars_left(preview)
        if left is not None and judge.estimate_cost(oracle_input) > left:
            return Judged(unaffordable=True)
        judgement = judge.judge(oracle_input)
    except JUDGE_ERRORS as exc:  # a judge error still costs what its failed attempts spent
        return Judged(cost=getattr(exc, "cost", None) or Cost(), error=str(exc))
    return Judged(judgement.verdict, judgement.cost, looked, notes=list(judgement.notes), by=judgement.model)


def run_iteration(store: Store, goal_id: str, maker: MakerWork | None = None, *, stuck_cap: int | None = None,
                  on_progress: Callable[[list[tuple[int, str, float, bool | None]]], None] | None = None,
                  edges: Edges | None = None, settle: MakerWork | None = None,
                  workdir: Path | None = None, attempt: Attempt | None = None) -> Outcome:
    """Run one whole iteration for an active goal and persist it. ``maker`` is charged first. ``settle`` is what
    the maker did that no later iteration will charge when the loop ends here (a Stop's held-back message,
    claude_code/hooks.py): charged, and the clock stopped, with the record. ``workdir``: the work when it is not in
    the goal's project, a worktree of it; ``attempt``: which of several parallel attempts did it (judged on its own)."""
    edges = edges or Edges()
    clock = edges.now
    goal = record_maker(store, goal_id, maker, now=clock()) if maker else store.load(Goal, goal_id)
    if goal.tampered:
        return stop_tampered(store, goal_id, edges, settle)
    if goal.state != "active":
        if settle is not None:
            goal = record_maker(store, goal_id, settle, detach=True, now=clock())
        return Outcome(goal, Decision(action="stop", stop_reason=goal.stop_reason))
    if goal.pending is None or goal.pending.number <= goal.spent.iterations:
        # `goal run` resumed after the maker was charged elsewhere, or a pending that needs repair
        goal = record_maker(store, goal_id, MakerReport(), now=clock())
    pending = goal.pending
    assert pending is not None
    goal = at(goal, workdir, attempt.number if attempt else None)
    root = Path(goal.project_root)
    notes: list[str] = []
    oracle_cost = Cost()  # every oracle call of the iteration, re-checks included
    with snapshot.session(root, snapshot.state_path(store.root, goal.goal_id, root)):  # its index of the tree
        for _ in range(MAX_RECHECKS + 1):
            moved_since = edges.watch(root)  # the tree as delivered: did it move while the checks ran?
            found = edges.run_conditions(goal.stopping_conditions, root, on_progress=on_progress,
                                         expected=_began_with(store.root, goal.goal_id))
            with snapshot.pinned(root):
                tree_fp = edges.fingerprint(root)
                green = all(e.passed for e in found)
                moved = moved_since() if green else []
                taken = edges.checkpoint(goal, pending.number)  # the tree the checks saw, before anything acts
                off_notes = [checkpoint.OFF_NOTE + taken.off] if taken.off not in (None, goal.checkpoints_off) else []
                flip_notes = _confirm_flips(goal, found, tree_fp, root, edges)
                regressions = progress.regressions(goal, found, taken.checkpoint.changed if taken.checkpoint else [],
                                                   pending.number, began_with=_began_with(store.root, goal.goal_id))
                guard = (delivered.refusal(moved, found) if moved
                         else edges.inspect(store.root, goal, found, pending.number, green=green))
            preview = copy_to_charge(goal)
            _charge(preview, pending.number, oracle_cost, clock())
            judged = _judge(goal, found, pending.maker_summary, root, preview, guard, edges)
            _charge(preview, pending.number, judged.cost, clock())
            oracle_cost = oracle_cost + judged.cost
            # decide sees the plan with this verdict's changes: a judge that completes the last task may converge
            judged.notes += plan.apply_verdict(preview, judged.verdict, pending.number)
            evidence = Evidence(conditions=found, tree_fingerprint=tree_fp,
                                tree_after_judge=edges.fingerprint(root) if judged.verdict and judged.looked else None,
                                maker_summary=pending.maker_summary, maker_failed=pending.maker_failed,
                                judge_error=judged.error, unaffordable=judged.unaffordable, integrity=guard,
                                regressions=regressions,
                                notes=notes + off_notes + flip_notes + judged.notes)
            decision = tampering.overrule(decide(preview, evidence, judged.verdict, stuck_cap=stuck_cap), guard)
            if decision.action != "recheck":
                break
            notes = decision.notes
        else:
            decision = Decision(action="continue", hint=decision.hint or "The files kept changing while the checks "
                                "ran; let them settle and stop again.", notes=decision.notes)
    record = Iteration(
        number=pending.number, started_at=pending.started_at, ended_at=now_iso(clock()),
        maker_summary=pending.maker_summary, conditions=found, tree_fingerprint=tree_fp, verdict=judged.verdict,
        judged_by=judged.by, judge_error=judged.error, decision=decision, maker_cost=pending.maker_cost,
        oracle_cost=oracle_cost, integrity=guard, checkpoint=taken.checkpoint, regressions=regressions,
        attempt=attempt.number if attempt else None)
    ends = attempt is None or not attempt.others or decision.stop_reason not in ATTEMPT_STOPS
    return _persist(store, goal_id, record, decision, edges, settle, checkpoints_off=taken.off, ends_goal=ends)


def _began_with(home: Path, goal_id: str) -> Callable[[int], set[str]]:
    """The test ids each condition's census began with (the guard's manifest), for telling a regression."""
    def read(index: int) -> set[str]:
        manifest = integrity.load(home, goal_id)
        return set((manifest.outcomes[index] if manifest and index < len(manifest.outcomes) else None) or ())

    return read


def at(goal: Goal, workdir: Path | None, attempt: int | None = None) -> Goal:
    """The goal as its work in ``workdir`` sees it: every check, the guard, the judge and the checkpoint look
    there. With ``attempt``, its history is that attempt's own iterations: its hint, its progress (stuck
    detection), its judge errors, the oracle's recent iterations and its next checkpoint's parent.
    A copy, never saved: the goal file keeps naming the project and holding every iteration."""
    update: dict[str, Any] = {}
    if workdir is not None:
        update["project_root"] = str(workdir)
    if attempt is not None:
        update["history"] = [it for it in goal.history if it.attempt == attempt]
    return goal.model_copy(update=update) if update else goal


def carries_on(goal: Goal, decision: Decision) -> bool:
    """Whether the maker works on after this decision: the loop did not end with it."""
    return decision.action == "continue" and goal.state == "active"


def _persist(store: Store, goal_id: str, record: Iteration, decision: Decision, edges: Edges,
             settle: MakerWork | None, checkpoints_off: str | None = None, ends_goal: bool = True,
             start: Callable[[Goal], Goal] | None = None) -> Outcome:
    now = edges.now()

    def change(goal: Goal) -> Goal:
        goal = start(goal) if start else goal
        if goal.spent.iterations < record.number:
            goal.checkpoints_off = checkpoints_off
        _record(goal, record, decision, now, ends_goal)
        if settle is not None and not carries_on(goal, decision):
            # No judge will see this work, so the maker's model is not checked against the oracle's here.
            _charge_maker(goal, settle(goal) if callable(settle) else settle, now, detach=True)
        return goal

    goal = store.update(Goal, goal_id, change, companion=triage.with_item(now))
    announce_end(store, goal, edges)
    return Outcome(goal, decision, record)


def _record(goal: Goal, record: Iteration, decision: Decision, now: datetime, ends_goal: bool = True) -> None:
    recorded = goal.spent.iterations >= record.number  # already: a retry after a crash, or a second writer's
    _charge(goal, record.number, record.oracle_cost, now)  # charged all the same: its judge was paid
    if recorded:
        return
    plan.apply_verdict(goal, record.verdict, record.number)  # its notes are in the record's decision already
    goal.history.append(record)
    goal.pending = None
    if goal.state != "active":  # paused or abandoned while the iteration ran: keep the record only
        return
    if decision.action == "converge":
        lifecycle.transition(goal, "converge", now)
    elif decision.action == "stop" and ends_goal:
        _escalate(goal, decision, now)


def announce_end(store: Store, goal: Goal, edges: Edges | None = None) -> None:
    """Once the ended goal is on disk: file its triage item (when escalated) and announce the end.
    Both are idempotent, so calling this again after a crash repairs what the crash left undone."""
    edges = edges or Edges()
    now = edges.now()
    if goal.state == "escalated" and goal.escalation and goal.escalation.triage_id:
        edges.file_escalation(store, goal, now)
    elif goal.state in ("converged", "failed"):  # no iteration will read its tree again
        snapshot.forget(store.root, goal.goal_id)
    edges.announce(store, goal, now)


def stop_if_exhausted(store: Store, goal_id: str, edges: Edges | None = None) -> Outcome | None:
    """Before the maker starts another iteration: escalate a goal whose budget is already spent."""
    edges = edges or Edges()
    now = edges.now()
    goal = store.load(Goal, goal_id)
    preview = copy_to_charge(goal)
    budget.accrue(preview, now)
    reason = budget.exhausted(preview)
    if goal.state != "active" or reason is None:
        return None
    decision = Decision(action="stop", stop_reason=reason, hint=goal.last_hint,
                        notes=[f"the {reason} limit was reached before the next iteration"])
    goal = store.update(Goal, goal_id, lambda g: _escalate(g, decision, now), companion=triage.with_item(now))
    announce_end(store, goal, edges)
    return Outcome(goal, decision)


def stop_tampered(store: Store, goal_id: str, edges: Edges, settle: MakerWork | None = None) -> Outcome:
    """Escalate a goal whose file was edited outside goal-convergence, whatever state the file claims,
    with its sealed terms back (tampering.py)."""
    goal = store.load(Goal, goal_id)
    record = tampering.record(goal, tampering.restored(store.root, goal)[1], edges.now())
    return _persist(store, goal_id, record, record.decision, edges, settle, goal.checkpoints_off,
                    start=lambda g: tampering.reopened(store.root, g))


def _escalate(goal: Goal, decision: Decision, now: datetime) -> Goal:
    """Move an active goal to escalated with its stop reason and the id its triage item will get."""
    return triage.escalate(goal, decision.stop_reason, decision.blocker, "; ".join(decision.notes[-2:]), now)
