"""The headless loop behind `goal run`: maker, then one engine iteration, until the goal ends.

Interrupted runs carry on where they stopped: counters and history live in the goal file, and a
maker whose work was already recorded (the pending iteration) is not run again. One runner works a
goal at a time, and a killed one's clock and children are settled by the next (claim.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..goals import creation, lookup, moves, specs
from ..models import EXIT_CODES, GOAL_ID_RE, Goal
from ..rules import budget
from ..storage.store import Store
from ..system import subreaper
from . import attempts as parallel
from . import claim, engine
from .makers import Maker

EXIT_PAUSED = 75


@dataclass
class RunResult:
    goal: Goal
    stop: str  # a stop reason, or "paused"
    outcomes: list[engine.Outcome] = field(default_factory=list)
    note: str | None = None  # with parallel attempts: which won, and where its work went

    @property
    def exit_code(self) -> int:
        return EXIT_CODES.get(self.stop, EXIT_PAUSED)

    def ledger(self) -> dict:
        """The summary `goal run --json` prints."""
        g = self.goal
        return {
            "goalId": g.goal_id,
            "met": self.stop == "converged",
            "stop": self.stop,
            "turns": g.spent.iterations,
            "totalCostUsd": round(g.spent.dollars, 6),
            "triageId": g.escalation.triage_id if g.escalation else None,
            **({"tampered": g.tampered} if g.tampered else {}),
            **({"note": self.note} if self.note else {}),
            "evidence": [
                {"iteration": it.number, "action": it.decision.action, "stopReason": it.decision.stop_reason,
                 "passing": sum(c.passed for c in it.conditions), "conditions": len(it.conditions),
                 "converged": it.verdict.converged if it.verdict else None,
                 "judgeError": it.judge_error, "hint": it.decision.hint,
                 "census": [c.census.dump() if c.census else None for c in it.conditions],
                 "integrity": it.integrity.dump() if it.integrity else None,
                 "treeFingerprint": it.tree_fingerprint, **({"attempt": it.attempt} if it.attempt else {}),
                 "costUsd": round(it.maker_cost.dollars + it.oracle_cost.dollars, 6)}
                for it in g.history
            ],
        }


def run_goal(store: Store, goal_id: str, maker: Maker, *,
             on_iteration: Callable[[engine.Outcome], None] | None = None,
             on_progress: Callable | None = None, edges: engine.Edges | None = None,
             workdir: Path | None = None, attempts: int | None = None, branch: str | None = None,
             settings: dict | None = None, on_start: Callable[[Goal], None] | None = None) -> RunResult:
    """Drive ``goal_id`` to its end (or until someone pauses it) with ``maker``. ``edges`` are the
    engine's (its clock included); tests hand in fakes. ``workdir``: a worktree to work in instead of the
    goal's project (engine.at). ``attempts`` (default: the goal's own, else one) makers race in worktrees of
    their own, and ``branch`` takes the winner's work instead of the user's files (attempts.py). ``settings``:
    the flags given with the goal's id (`goal run ID --oracle conditions`), applied once the claim is held, so
    a run refused because another holds it changes nothing. ``on_start`` sees the goal as the run begins it."""
    edges = edges or engine.Edges()
    if settings:
        moves.check_settings(store, goal_id, settings, via="goal run")  # a refusal leaves the goal as it was
    claim.take(store, goal_id, edges.now())
    try:
        if settings:
            moves.reconfigure(store, goal_id, settings, via="goal run")
        goal = store.load(Goal, goal_id)
        if on_start:
            on_start(goal)
        n = parallel.count(goal, attempts) if workdir is None else 1  # a worktree's goal (a wave's) is one maker
        if goal.state == "active":
            engine.check_oracle(goal, edges)  # before the maker spends anything (errors.py)
        with claim.working(store, goal_id, edges.now):
            if workdir is None and goal.state == "active":
                parallel.sweep(goal)  # what a killed run of its attempts left
                if n > 1 or branch:
                    raced = parallel.race(store, goal_id, maker, n, branch=branch, edges=edges,
                                          on_iteration=on_iteration, on_progress=on_progress)
                    return RunResult(raced.goal, raced.goal.stop_reason or "paused", raced.outcomes, raced.note)
            return _loop(store, goal_id, maker, edges, on_iteration, on_progress, workdir)
    finally:
        claim.release(store, goal_id, edges.now())


def _loop(store: Store, goal_id: str, maker: Maker, edges: engine.Edges,
          on_iteration: Callable[[engine.Outcome], None] | None, on_progress: Callable | None,
          workdir: Path | None = None) -> RunResult:
    outcomes: list[engine.Outcome] = []
    while True:
        goal = store.load(Goal, goal_id)
        if goal.tampered:  # before its state, which the edit may have set
            outcomes.append(engine.stop_tampered(store, goal_id, edges))
            return RunResult(outcomes[-1].goal, "tampered", outcomes)
        if goal.state != "active":
            engine.announce_end(store, goal, edges)  # idempotent: repairs an end a crash left unannounced
            return RunResult(goal, goal.stop_reason or "paused", outcomes)
        stopped = engine.stop_if_exhausted(store, goal_id, edges)
        if stopped:
            return RunResult(stopped.goal, stopped.decision.stop_reason or "ceiling", outcomes)
        if goal.pending is None:
            with subreaper.ending_strays():  # before the checks see the tree
                report = maker.work(engine.at(goal, workdir), goal.last_hint, budget.seconds_left(goal))
            goal = engine.record_maker(store, goal_id, report, now=edges.now())
            if goal.state != "active":
                continue
        outcome = engine.run_iteration(store, goal_id, on_progress=on_progress, edges=edges, workdir=workdir)
        outcomes.append(outcome)
        if on_iteration:
            on_iteration(outcome)


def target_goal(store: Store, target: str | None, new_spec: Callable[[], specs.GoalSpec],
                on_progress: Callable | None = None, given: dict | None = None) -> tuple[str, dict]:
    """`goal run` takes a goal id, an objective for a new goal, or nothing (this project's open goal): the goal's
    id, and the flags ``given`` on the command line that apply to an existing goal, for ``run_goal`` to apply
    under the claim (or refuse: moves.reconfigure)."""
    if target is not None and not GOAL_ID_RE.match(target):
        return creation.new_goal(store, new_spec(), on_progress=on_progress).goal_id, {}
    given = dict(given or {})
    given.pop("attempts", None)  # how this run works (runner.run_goal), not a setting of the goal
    return target or lookup.resolve(store, None, given.pop("project", None)).goal_id, given
