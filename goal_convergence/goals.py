"""Creating goals and moving them through their life: the library behind `goal new/pause/resume/...`."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from . import budget, checkpoint, conditions, cost, index, inference, integrity, lifecycle, notify, plan, tree, worktree
from .defaults import DEFAULT_ORACLE_MODEL, OTHER_ORACLE_MODELS
from .errors import AmbiguousGoal, GoalNotFound, IllegalTransition, InvalidInput, PriceUnknown, UsageError, problems
from .models import (Budget, ConditionEvidence, Goal, HeartbeatMark, MakerConfig, OracleConfig, SettingChange,
                     SettingsChange, StoppingCondition, TriageItem, new_id, now_iso)
from .oracle import judged_by_maker_model, judges_with_model
from .store import Store

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
    tests_may_change: bool = False  # the objective is to change tests: the integrity guard reports, not enforces
    stuck_after: int = 3
    tasks: list[str] = field(default_factory=list)  # the plan's first tasks (plan.py)
    min_confidence: float | None = None
    attempts: int | None = None  # the makers `goal run` races by default (attempts.py)
    source: str = "user"
    heartbeat: HeartbeatMark | None = None  # the failure a heartbeat made (or found) this goal for
    start: list[ConditionEvidence] | None = None  # a run of these conditions just made (the heartbeat's)

    def add_condition(self, kind: str, command: str, threshold: float | None = None) -> None:
        """Add one condition as its flag would (a coverage check without a threshold is a plain check)."""
        flag = {"test_pass": "test", "lint_clean": "lint", "build_pass": "build"}.get(kind)
        if flag and getattr(self, flag) is None:
            setattr(self, flag, command)
        elif kind == "coverage_threshold" and threshold is not None and self.coverage is None:
            self.coverage, self.coverage_cmd = threshold, command
        else:
            self.checks.append(command)


def find_project(path: Path | str | None) -> Path:
    """The project root of the folder the user named (default: cwd), which must exist."""
    folder = Path(path or os.getcwd()).expanduser().resolve()
    if not folder.is_dir():
        raise InvalidInput(f"project folder {folder} does not exist; pass an existing folder with --project")
    return index.project_root(folder)


def check_models_differ(oracle: OracleConfig, maker_model: str | None) -> None:
    if judged_by_maker_model(oracle, maker_model):
        others = [m for m in (DEFAULT_ORACLE_MODEL, *OTHER_ORACLE_MODELS) if not judged_by_maker_model(
            oracle.model_copy(update={"model": m}), maker_model)]
        raise InvalidInput(
            f"the oracle model ({oracle.model}) is the maker's model ({maker_model}); an independent judge must be "
            f"a different model: pass --oracle-model with another one (e.g. {' or '.join(others[:2])})"
        )


def oracle_config(provider: str, model: str, command: str | None, expect: str | None,
                  maker_model: str | None) -> OracleConfig:
    """The judge a user asked for, refused when it could not judge this goal: a command oracle with no
    program, the maker's own model, or a model whose money could not be counted."""
    with _user_input():
        oracle = OracleConfig(provider=provider, model=model, command=command, expect=expect)  # type: ignore[arg-type]
    if oracle.provider == "command" and not oracle.command:
        raise InvalidInput("--oracle command needs --oracle-cmd CMD (a program that reads the input on stdin)")
    check_models_differ(oracle, maker_model)
    if judges_with_model(oracle.provider):
        try:
            cost.price_for(oracle.model)  # an oracle whose money we could not count is refused up front
        except PriceUnknown as exc:
            raise InvalidInput(str(exc)) from None
    return oracle


def build_conditions(spec: GoalSpec, root: Path) -> list[StoppingCondition]:
    conds: list[StoppingCondition] = []
    for kind, cmd in (("test_pass", spec.test), ("lint_clean", spec.lint), ("build_pass", spec.build)):
        if cmd is not None:
            conds.append(StoppingCondition(type=kind, command=_command(cmd, kind.split("_")[0])))  # type: ignore[arg-type]
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


def _limit(name: str, value: object) -> object:
    """One budget limit as given on the command line; 0 (or a duration of 0) means "no limit"."""
    flag = "--" + name.replace("_", "-")
    if value is None:
        return None
    if name == "max_duration":
        return None if value == "0" or budget.parse_duration(value) == 0 else value  # type: ignore[arg-type]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise InvalidInput(f"{flag} {value!r} is not a limit; give a number of 0 or more (0: no limit)")
    if name != "max_dollars" and value != int(value):
        raise InvalidInput(f"{flag} {value!r} is not a whole number")
    return None if value == 0 else (float(value) if name == "max_dollars" else int(value))


def make_budget(limits: dict[str, object]) -> Budget:
    """A budget from limits given by a user (0 means no limit); refused when no limit is left."""
    checked = {name: _limit(name, value) for name, value in limits.items()}
    if all(v is None for v in checked.values()):
        raise InvalidInput(
            "a goal needs at least one budget limit so it cannot run forever: "
            "give --max-iterations N, --max-duration 2h or --max-dollars 10"
        )
    return Budget(**checked)


def build_budget(spec: GoalSpec) -> Budget:
    return make_budget({"max_iterations": spec.max_iterations, "max_duration": spec.max_duration,
                        "max_dollars": spec.max_dollars, "max_tokens": spec.max_tokens})


@contextmanager
def _user_input() -> Iterator[None]:
    """What the models refuse in values a user gave is bad input (exit 65), not a crash."""
    try:
        yield
    except ValidationError as exc:
        raise InvalidInput(f"{problems(exc, 1)}; fix it and try again") from None


def new_goal(store: Store, spec: GoalSpec, now: datetime | None = None,
             on_progress: conditions.ProgressCallback | None = None) -> Goal:
    """Create, validate and save a goal; refuse with a clear message when a hard rule is broken.

    The check-defining files are kept as they are, and the conditions run once (``on_progress``
    follows that run) for the test census the goal is held to."""
    now = now or datetime.now(UTC)
    if not spec.objective.strip():
        raise InvalidInput("the objective is empty; say what should be true when the goal is done")
    root = find_project(spec.project)
    oracle = oracle_config(spec.oracle_provider, spec.oracle_model, spec.oracle_command, spec.expect, spec.maker_model)
    conds = build_conditions(spec, root)
    if spec.session_id:
        _refuse_second_goal_in_session(store, spec.session_id)
    stamp = now_iso(now)
    with _user_input():
        goal = _goal(spec, root, conds, oracle, stamp)
    manifest, goal.baseline = integrity.record(store.root, goal.goal_id, root, conds, goal.protect)
    start = spec.start or conditions.run_conditions(conds, root, on_progress=on_progress)
    return store.create(integrity.save(store.root, goal, manifest, start))


def _goal(spec: GoalSpec, root: Path, conds: list[StoppingCondition], oracle: OracleConfig, stamp: str) -> Goal:
    return Goal(
        goal_id=new_id("goal-"),
        objective=spec.objective,
        stopping_conditions=conds,
        budget=build_budget(spec),
        oracle=oracle,
        maker=MakerConfig(model=spec.maker_model, attempts=spec.attempts),
        session_id=spec.session_id,
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
        active_since=stamp if spec.session_id else None,
        created_at=stamp,
        updated_at=stamp,
    )


def _refuse_second_goal_in_session(store: Store, session_id: str, except_id: str | None = None) -> None:
    for s in index.bound_to_session(store.summaries(), session_id):
        if s["goalId"] != except_id:
            raise InvalidInput(
                f"this session already works on {s['goalId']} ({s['objective']!r}); "
                f"pause or abandon it first, or start the new goal in another session"
            )


def resolve(store: Store, goal_id: str | None, project: Path | str | None = None,
            states: tuple[str, ...] = ("active", "paused")) -> Goal:
    """The goal named, or else the one open goal of the current project."""
    if goal_id:
        return store.load(Goal, goal_id)
    root = str(find_project(project))
    found = [s for s in store.summaries() if s["projectRoot"] == root and s["state"] in states]
    if not found:
        raise GoalNotFound(f"no {' or '.join(states)} goal in {root}; start one with `goal new OBJECTIVE` "
                           f"or see `goal list --all`")
    if len(found) > 1:
        lines = "\n".join(f"  {s['goalId']}  {s['state']:<9}  {s['objective']}" for s in found)
        raise AmbiguousGoal(f"{len(found)} goals are open in {root}; name one:\n{lines}")
    return store.load(Goal, found[0]["goalId"])


def move(store: Store, goal_id: str, action: str, now: datetime | None = None, *,
         keep_checkpoints: bool = False) -> Goal:
    """pause or abandon a goal (resume has its own function: it binds a session and may raise a budget).
    An abandoned goal's checkpoint refs are removed unless kept."""
    now = now or datetime.now(UTC)
    goal = store.update(Goal, goal_id, lambda g: lifecycle.transition(g, action, now))
    if action == "abandon":
        worktree.sweep(Path(goal.project_root), goal.goal_id, worktree.ATTEMPTS)  # a killed run's parallel attempts
        if not keep_checkpoints:
            checkpoint.drop(goal.goal_id, goal.project_root)
        notify.goal_ended(store, goal, now)
    return goal


# What an existing goal takes from flags (`goal run ID`, `goal resume ID`, `goal triage act`): how it is
# run and paid for. Its conditions, protected files, integrity terms and binding are what its baseline
# was taken against, so they are fixed when it is made.
SETTINGS = {"max_iterations": "maxIterations", "max_duration": "maxDuration", "max_dollars": "maxDollars",
            "max_tokens": "maxTokens", "oracle_provider": "oracle", "oracle_model": "oracleModel",
            "oracle_command": "oracleCommand", "expect": "expect", "maker_model": "makerModel",
            "stuck_after": "stuckAfter", "min_confidence": "minConfidence"}
_BUDGET = ("max_iterations", "max_duration", "max_dollars", "max_tokens")


def _settings(goal: Goal) -> dict[str, object]:
    b, o = goal.budget, goal.oracle
    return {"maxIterations": b.max_iterations, "maxDuration": b.max_duration, "maxDollars": b.max_dollars,
            "maxTokens": b.max_tokens, "oracle": o.provider, "oracleModel": o.model, "oracleCommand": o.command,
            "expect": o.expect, "makerModel": goal.maker.model, "stuckAfter": goal.stuck_after,
            "minConfidence": goal.min_confidence}


def change_settings(goal: Goal, given: dict, via: str, now: datetime) -> Goal:
    """Apply flags given with an existing goal, in place, and record what they changed in its
    settings history; flags for what is fixed when a goal is made are refused, never ignored."""
    fixed = [k for k in given if k not in SETTINGS]
    if fixed:
        named = {"checks": "check", "session_id": "session", "tasks": "task"}
        flags = ", ".join("--" + named.get(k, k).replace("_", "-") for k in fixed)
        raise UsageError(f"{flags} cannot change on an existing goal ({goal.goal_id}): its conditions, protected "
                         f"files, integrity terms, project and session are what it was made with; start a new goal "
                         f"for other checks (`goal run OBJECTIVE ...`), or leave the flag out")
    before = _settings(goal)
    if any(k in given for k in _BUDGET):
        goal.budget = make_budget({**goal.budget.model_dump(), **{k: given[k] for k in _BUDGET if k in given}})
    maker_model = given.get("maker_model", goal.maker.model)
    if any(k in given for k in ("oracle_provider", "oracle_model", "oracle_command", "expect", "maker_model")):
        o = goal.oracle
        goal.oracle = oracle_config(given.get("oracle_provider", o.provider), given.get("oracle_model", o.model),
                                    given.get("oracle_command", o.command), given.get("expect", o.expect), maker_model)
        goal.maker.model = maker_model
        plan.require_judge(goal.tasks, goal.oracle.provider)
    for key in ("stuck_after", "min_confidence"):
        if key in given:
            setattr(goal, key, given[key])
    after = _settings(goal)
    changes = [SettingChange(setting=k, before=v, after=after[k]) for k, v in before.items() if after[k] != v]
    if changes:
        goal.settings_history.append(SettingsChange(at=now_iso(now), via=via, changes=changes))
    return goal


def reconfigure(store: Store, goal_id: str, given: dict, via: str, now: datetime | None = None) -> Goal:
    """Apply flags given with an existing goal (`goal run ID --max-iterations 25 --oracle conditions`).
    An escalated goal is re-opened with them: that is what they were given for."""
    now = now or datetime.now(UTC)
    if store.load(Goal, goal_id).state == "escalated":
        return resume(store, goal_id, raise_budget=given, via=via, now=now)

    def change(goal: Goal) -> Goal:
        if goal.state in ("converged", "failed"):
            raise IllegalTransition(f"goal {goal_id} is {goal.state}, so its settings no longer matter; start a new "
                                    f"goal with `goal run OBJECTIVE ...`")
        return change_settings(goal, given, via, now)

    return store.update(Goal, goal_id, change)


def resume(store: Store, goal_id: str, *, session_id: str | None = None, raise_budget: dict | None = None,
           now: datetime | None = None, via: str = "goal resume") -> Goal:
    """Carry on with a goal: re-open a paused or escalated one, and bind it to ``session_id``.

    An active goal is simply re-bound (that is how a goal moves to a new session). An escalated goal
    whose budget is still spent needs a raised budget first, or it would stop again at once. Its
    triage item is resolved: the goal is being worked on again, and it escalates anew if it must.
    """
    now = now or datetime.now(UTC)
    if session_id:
        _refuse_second_goal_in_session(store, session_id, except_id=goal_id)
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
            goal.active_since = None
        budget.accrue(goal, now)
        goal.session_id = session_id or goal.session_id
        goal.active_since = now_iso(now) if session_id else None
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
