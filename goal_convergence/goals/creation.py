"""Creating a goal: its spec checked, its baseline kept, its conditions run once, the file written."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

from ..checks import conditions
from ..errors import InvalidInput
from ..guard import environment, integrity
from ..models import Goal, MakerConfig, OracleConfig, StoppingCondition, new_id, now_iso
from ..rules import budget, plan
from ..storage.store import Store
from ..system import clock
from ..vcs import snapshot, tree
from . import lookup
from .specs import GoalSpec, build_budget, build_conditions, oracle_config, user_input


def new_goal(store: Store, spec: GoalSpec, now: datetime | None = None,
             on_progress: conditions.ProgressCallback | None = None) -> Goal:
    """Create, validate and save a goal; refuse with a clear message when a hard rule is broken.

    The check-defining files are kept as they are, and the conditions run once (``on_progress``
    follows that run) for the test census the goal is held to."""
    now = now or clock.now()
    if not spec.objective.strip():
        raise InvalidInput("the objective is empty; say what should be true when the goal is done")
    root = lookup.find_project(spec.project)
    oracle = oracle_config(spec.oracle_provider, spec.oracle_model, spec.oracle_command, spec.expect, spec.maker_model)
    conds = build_conditions(spec, root)
    if spec.session_id:
        lookup.refuse_second_goal_in_session(store, spec.session_id)
    stamp, goal_id = now_iso(now), new_id("goal-")
    try:
        # One listing of the tree for the fingerprint, the baseline and the start tree, in the index the goal keeps.
        with snapshot.session(root, snapshot.state_path(store.root, goal_id, root)), snapshot.pinned(root):
            with user_input():
                goal = _goal(goal_id, spec, root, conds, oracle, stamp)
            budget.run_clock(goal, now, bool(spec.session_id))  # a session works it from now: its clock runs
            manifest, goal.baseline = integrity.record(store.root, goal.goal_id, root, conds, goal.protect)
        # The runner's environment is probed while the start run runs: that run writes no bytecode where the
        # record looks (its bytecode goes to a folder of our own, checks/pycache.py), so the two do not meet.
        with ThreadPoolExecutor(max_workers=1) as pool:
            probed = pool.submit(environment.record, root, conds)
            start = spec.start or conditions.run_conditions(conds, root, on_progress=on_progress)
            manifest.environment = probed.result()
        return store.create(integrity.save(store.root, goal, manifest, start))
    except BaseException:
        snapshot.forget(store.root, goal_id)  # no goal came of it
        raise


def _goal(goal_id: str, spec: GoalSpec, root: Path, conds: list[StoppingCondition], oracle: OracleConfig,
          stamp: str) -> Goal:
    return Goal(
        goal_id=goal_id,
        objective=spec.objective,
        stopping_conditions=conds,
        budget=build_budget(spec),
        oracle=oracle,
        maker=MakerConfig(model=spec.maker_model, attempts=spec.attempts),
        session_id=spec.session_id,
        agent=spec.agent,  # type: ignore[arg-type]
        project_root=str(root),
        source=spec.source,  # type: ignore[arg-type]
        stuck_after=spec.stuck_after,
        protect=spec.protect,
        tests_may_change=spec.tests_may_change,
        tasks=plan.seed(spec.tasks, oracle.provider),
        min_confidence=spec.min_confidence,
        base_commit=tree.head_commit(root),
        base_tree=tree.tree_fingerprint(root),
        heartbeat=spec.heartbeat,
        created_at=stamp,
        updated_at=stamp,
    )
