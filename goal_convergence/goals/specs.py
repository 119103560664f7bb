"""What `goal new` can be told (``GoalSpec``), and its conditions, budget and judge checked and built."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from ..checks import inference
from ..errors import InvalidInput, PriceUnknown, problems
from ..models import Budget, ConditionEvidence, HeartbeatMark, OracleConfig, StoppingCondition, target
from ..oracle import judged_by_maker_model, judges_with_model
from ..rules import budget
from ..rules.defaults import (DEFAULT_CODEX_ORACLE_MODEL, DEFAULT_ORACLE_MODEL, OTHER_CODEX_ORACLE_MODELS,
                              OTHER_ORACLE_MODELS)
from ..storage import cost

CONDITION_FLAGS = ("--test CMD, --lint CMD, --build CMD, --coverage PCT [--coverage-cmd CMD], --metric CMD --target "
                   "'<= N' or --check CMD")


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
    metric: str | None = None  # a command printing a number, which must meet ``metric_target`` (checks/metric.py)
    metric_target: str | None = None
    metric_regex: str | None = None
    metric_runs: int | None = None
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
    agent: str = "claude-code"  # the agent of that session (Goal.agent)
    protect: list[str] = field(default_factory=list)
    tests_may_change: bool = False  # the objective is to change tests: the integrity guard reports, not enforces
    stuck_after: int = 3
    tasks: list[str] = field(default_factory=list)  # the plan's first tasks (plan.py)
    min_confidence: float | None = None
    attempts: int | None = None  # the makers `goal run` races by default (attempts.py)
    source: str = "user"
    heartbeat: HeartbeatMark | None = None  # the failure a heartbeat made (or found) this goal for
    start: list[ConditionEvidence] | None = None  # a run of these conditions just made (the heartbeat's)

    def add_condition(self, kind: str, command: str, threshold: float | None = None, *, target: str | None = None,
                      metric_regex: str | None = None, runs: int | None = None) -> None:
        """Add one condition as its flag would (a coverage check without a threshold, or a metric without a
        target, is a plain check)."""
        flag = {"test_pass": "test", "lint_clean": "lint", "build_pass": "build"}.get(kind)
        if flag and getattr(self, flag) is None:
            setattr(self, flag, command)
        elif kind == "coverage_threshold" and threshold is not None and self.coverage is None:
            self.coverage, self.coverage_cmd = threshold, command
        elif kind == "metric" and target is not None and self.metric is None:
            self.metric, self.metric_target, self.metric_regex, self.metric_runs = command, target, metric_regex, runs
        else:
            self.checks.append(command)


def check_models_differ(oracle: OracleConfig, maker_model: str | None) -> None:
    if judged_by_maker_model(oracle, maker_model):
        known = (DEFAULT_CODEX_ORACLE_MODEL, *OTHER_CODEX_ORACLE_MODELS) if oracle.provider == "codex-cli" else (
            DEFAULT_ORACLE_MODEL, *OTHER_ORACLE_MODELS)
        others = [m for m in known if not judged_by_maker_model(
            oracle.model_copy(update={"model": m}), maker_model)]
        raise InvalidInput(
            f"the oracle model ({oracle.model}) is the maker's model ({maker_model}); an independent judge must be "
            f"a different model: pass --oracle-model with another one (e.g. {' or '.join(others[:2])})"
        )


def oracle_config(provider: str, model: str, command: str | None, expect: str | None,
                  maker_model: str | None) -> OracleConfig:
    """The judge a user asked for, refused when it could not judge this goal: a command oracle with no
    program, the maker's own model, or a model whose money could not be counted."""
    if provider == "codex-cli" and model == DEFAULT_ORACLE_MODEL:  # a Claude model: Codex runs OpenAI's
        model = DEFAULT_CODEX_ORACLE_MODEL
    with user_input():
        oracle = OracleConfig(provider=provider, model=model, command=command, expect=expect)  # type: ignore[arg-type]
    if expect is not None:
        try:
            re.compile(expect, re.MULTILINE)
        except re.error as exc:
            raise InvalidInput(f"--expect {expect!r} is not a valid regular expression ({exc})") from None
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
    conds += _metric(spec)
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


def _metric(spec: GoalSpec) -> list[StoppingCondition]:
    if spec.metric is None:
        if spec.metric_target is not None or spec.metric_regex is not None or spec.metric_runs is not None:
            raise InvalidInput("--target, --metric-regex and --metric-runs need --metric CMD (the command that "
                               "prints the number)")
        return []
    if spec.metric_target is None:
        raise InvalidInput("--metric needs --target, the comparison its number must meet: '<= 0', '>= 90', '< 200'")
    try:
        target.parse_target(spec.metric_target)
        if spec.metric_regex is not None:
            re.compile(spec.metric_regex)
    except (ValueError, re.error) as exc:
        raise InvalidInput(f"{exc}; fix --target or --metric-regex") from None
    with user_input():
        return [StoppingCondition(type="metric", command=_command(spec.metric, "metric"),
                                  target=spec.metric_target.strip(), metric_regex=spec.metric_regex,
                                  runs=spec.metric_runs)]


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
def user_input() -> Iterator[None]:
    """What the models refuse in values a user gave is bad input (exit 65), not a crash."""
    try:
        yield
    except ValidationError as exc:
        raise InvalidInput(f"{problems(exc, 1)}; fix it and try again") from None
