"""Creating goals and moving them through their life: the library behind `goal new/pause/resume/...`."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from . import budget, inference, lifecycle, protect, tree
from .errors import AmbiguousGoal, GoalNotFound, IllegalTransition, InvalidInput
from .models import Budget, Goal, MakerConfig, OracleConfig, StoppingCondition, new_id, now_iso
from .store import Store

DEFAULT_ORACLE_MODEL = "claude-haiku-5-5"
CONDITION_FLAGS = "--test CMD, --lint CMD, --build CMD, --coverage PCT [--coverage-cmd CMD] or --check CMD"


@dataclass
class GoalSpec:
    """Everything `goal new` can be told. ``None`` budget limits mean "no limit on that"."""

    objective: str
    project: Path = field(default_factory=Path.cwd)
    test: str | None = None
    lint: str | None = None
    build: str | None = None
    coverage: float | None = None
    coverage_cmd: str | None = None
    checks: list[str] = field(default_factory=list)
    max_iterations: int | None = 15
    max_duration: str | None = "2h"
    max_dollars: float | None = 10.0
    max_tokens: int | None = None
    oracle_provider: str = "auto"
    oracle_model: str = DEFAULT_ORACLE_MODEL
    oracle_command: str | None = None
    expect: str | None = None
    maker_model: str | None = None
    session_id: str | None = None
    protect: list[str] = field(default_factory=list)
    stuck_after: int = 3
    source: str = "user"


def project_root(path: Path | str | None = None) -> Path:
    """The git top level of ``path`` (default: cwd), or the folder itself outside git."""
    folder = Path(path or os.getcwd()).expanduser().resolve()
    if not folder.is_dir():
        raise InvalidInput(f"project folder {folder} does not exist; pass an existing folder with --project")
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=folder, capture_output=True,
                             text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        top = ""
    return Path(top).resolve() if top else folder


def same_model(a: str | None, b: str | None) -> bool:
    """Model ids name the same model when they differ only by a date or context suffix."""
    if not a or not b:
        return False
    norm = [re.sub(r"(\[1m\]|-\d{8}|-latest)$", "", m.strip().lower()) for m in (a, b)]
    return norm[0] == norm[1]


def check_models_differ(oracle: OracleConfig, maker_model: str | None) -> None:
    if oracle.provider in ("auto", "anthropic", "claude-cli") and same_model(oracle.model, maker_model):
        raise InvalidInput(
            f"the oracle model ({oracle.model}) is the maker's model ({maker_model}); an independent judge must be "
            f"a different model: pass --oracle-model with another one (e.g. {DEFAULT_ORACLE_MODEL} or claude-sonnet-5-5)"
        )


def build_conditions(spec: GoalSpec, root: Path) -> list[StoppingCondition]:
    conds: list[StoppingCondition] = []
    for kind, cmd in (("test_pass", spec.test), ("lint_clean", spec.lint), ("build_pass", spec.build)):
        if cmd is not None:
            conds.append(StoppingCondition(type=kind, command=_command(cmd, kind)))  # type: ignore[arg-type]
    if spec.coverage is not None:
        if not 0 <= spec.coverage <= 100:
            raise InvalidInput(f"--coverage {spec.coverage} is not a percentage; give a number from 0 to 100")
        cmd = spec.coverage_cmd or inference.project_commands(root).get("coverage_threshold")
        if not cmd:
            raise InvalidInput(f"no coverage command could be found in {root}; give one with --coverage-cmd CMD")
        conds.append(StoppingCondition(type="coverage_threshold", command=_command(cmd, "coverage"),
                                       threshold=float(spec.coverage)))
    elif spec.coverage_cmd is not None:
        raise InvalidInput("--coverage-cmd needs --coverage PCT (the threshold to reach)")
    conds += [StoppingCondition(type="custom_command", command=_command(c, "check")) for c in spec.checks]
    if conds:
        return conds
    inferred, missing = inference.infer(spec.objective, root)
    if missing:
        names = ", ".join(m.split("_")[0] for m in missing)
        raise InvalidInput(
            f"the objective asks for {names} but no command for it was found in {root}; "
            f"give the conditions as flags: {CONDITION_FLAGS}"
        )
    if not inferred:
        raise InvalidInput(
            f"no stopping condition could be inferred from the objective or from {root}; "
            f"give at least one: {CONDITION_FLAGS}"
        )
    return inferred


def _command(cmd: str, what: str) -> str:
    if not cmd.strip():
        raise InvalidInput(f"the {what} command is empty; give the shell command that checks it")
    return cmd


def build_budget(spec: GoalSpec) -> Budget:
    limits = {
        "max_iterations": spec.max_iterations or None,
        "max_duration": spec.max_duration or None,
        "max_dollars": spec.max_dollars or None,
        "max_tokens": spec.max_tokens or None,
    }
    if limits["max_duration"] is not None:
        budget.parse_duration(limits["max_duration"])
    for name in ("max_iterations", "max_dollars", "max_tokens"):
        if limits[name] is not None and limits[name] < 0:
            raise InvalidInput(f"--{name.replace('_', '-')} cannot be negative")
    if all(v is None for v in limits.values()):
        raise InvalidInput(
            "a goal needs at least one budget limit so it cannot run forever: "
            "give --max-iterations N, --max-duration 2h or --max-dollars 10"
        )
    return Budget(**limits)


def new_goal(store: Store, spec: GoalSpec, now: datetime | None = None) -> Goal:
    """Create, validate and save a goal; refuse with a clear message when a hard rule is broken."""
    now = now or datetime.now(UTC)
    if not spec.objective.strip():
        raise InvalidInput("the objective is empty; say what should be true when the goal is done")
    root = project_root(spec.project)
    oracle = OracleConfig(provider=spec.oracle_provider, model=spec.oracle_model,  # type: ignore[arg-type]
                          command=spec.oracle_command, expect=spec.expect)
    if oracle.provider == "command" and not oracle.command:
        raise InvalidInput("--oracle command needs --oracle-cmd CMD (a program that reads the input on stdin)")
    check_models_differ(oracle, spec.maker_model)
    conditions = build_conditions(spec, root)
    if spec.session_id:
        _refuse_second_goal_in_session(store, spec.session_id)
    stamp = now_iso(now)
    goal = Goal(
        goal_id=new_id("goal-"),
        objective=spec.objective,
        stopping_conditions=conditions,
        budget=build_budget(spec),
        oracle=oracle,
        maker=MakerConfig(model=spec.maker_model),
        session_id=spec.session_id,
        project_root=str(root),
        source=spec.source,  # type: ignore[arg-type]
        stuck_after=spec.stuck_after,
        protected_files=protect.detect(root, conditions, spec.protect),
        base_commit=tree.head_commit(root),
        active_since=stamp if spec.session_id else None,
        created_at=stamp,
        updated_at=stamp,
    )
    return store.create(goal)


def _refuse_second_goal_in_session(store: Store, session_id: str, except_id: str | None = None) -> None:
    for s in store.summaries():
        if s["sessionId"] == session_id and s["state"] == "active" and s["goalId"] != except_id:
            raise InvalidInput(
                f"this session already works on {s['goalId']} ({s['objective']!r}); "
                f"pause or abandon it first, or start the new goal in another session"
            )


def resolve(store: Store, goal_id: str | None, project: Path | str | None = None,
            states: tuple[str, ...] = ("active", "paused")) -> Goal:
    """The goal named, or else the one open goal of the current project."""
    if goal_id:
        return store.load(Goal, goal_id)
    root = str(project_root(project))
    found = [s for s in store.summaries() if s["projectRoot"] == root and s["state"] in states]
    if not found:
        raise GoalNotFound(f"no {' or '.join(states)} goal in {root}; start one with `goal new OBJECTIVE` "
                           f"or see `goal list --all`")
    if len(found) > 1:
        lines = "\n".join(f"  {s['goalId']}  {s['state']:<9}  {s['objective']}" for s in found)
        raise AmbiguousGoal(f"{len(found)} goals are open in {root}; name one:\n{lines}")
    return store.load(Goal, found[0]["goalId"])


def move(store: Store, goal_id: str, action: str, now: datetime | None = None) -> Goal:
    """pause or abandon a goal (resume has its own function: it binds a session and may raise a budget)."""
    now = now or datetime.now(UTC)
    return store.update(Goal, goal_id, lambda g: lifecycle.transition(g, action, now))


def resume(store: Store, goal_id: str, *, session_id: str | None = None, raise_budget: dict | None = None,
           now: datetime | None = None) -> Goal:
    """Carry on with a goal: re-open a paused or escalated one, and bind it to ``session_id``.

    An active goal is simply re-bound (that is how a goal moves to a new session). An escalated goal
    whose budget is still spent needs a raised budget first, or it would stop again at once.
    """
    now = now or datetime.now(UTC)
    if session_id:
        _refuse_second_goal_in_session(store, session_id, except_id=goal_id)

    def change(goal: Goal) -> Goal:
        if raise_budget:
            goal.budget = Budget(**{**goal.budget.model_dump(), **raise_budget})
        if goal.state != "active":
            lifecycle.transition(goal, "resume", now)
        spent = budget.exhausted(goal)
        if spent:
            raise IllegalTransition(
                f"goal {goal.goal_id} has spent its budget ({spent}); raise it, e.g. "
                f"`goal resume {goal.goal_id} --max-iterations {goal.spent.iterations + 10}`"
            )
        budget.accrue(goal, now)
        goal.session_id = session_id or goal.session_id
        goal.active_since = now_iso(now) if session_id else None
        return goal

    return store.update(Goal, goal_id, change)
