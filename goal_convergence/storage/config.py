"""The user's settings: a project's (`.goal-convergence.toml`, else `[tool.goal-convergence]` in
pyproject.toml) and the home's (`config.toml` under $GOAL_CONVERGENCE_HOME).

Project settings, all optional::

    notify = "notify-send goal-convergence"     # run when one of this project's goals ends

    [heartbeat]                                 # [tool.goal-convergence.heartbeat] in pyproject.toml
    mode = "goal"                               # or "triage": failures become triage items
    max_new_per_hour = 3
    checks = [{ type = "test_pass", command = "npm test" },
              { type = "coverage_threshold", command = "npm run coverage", threshold = 80 }]
    oracle = "auto"                             # the heartbeat goals' oracle; "conditions": no model
    oracle_model = "claude-haiku-5-5"
    oracle_command = "..."                      # with oracle = "command"
    tests_may_change = false                    # true: the integrity guard reports test changes, not blocks
    min_confidence = 0.8                        # a converged verdict less confident than this is a veto

    [heartbeat.budget]                          # each heartbeat goal's budget (0: no limit on that)
    max_iterations = 10
    max_duration = "1h"
    max_dollars = 5.0

The home's `config.toml` may say ``notify = "..."`` for every project; its other keys are left to
whoever else keeps settings there (the home defaults to ~/.claude).

And the environment's, read by ``env_settings`` (validated where a command or a hook starts; errors.py):
GOAL_CONVERGENCE_ORACLE_TIMEOUT (seconds one oracle call may take, default 120),
GOAL_CONVERGENCE_ORACLE_RETRIES (retries of a call that failed with 429, 5xx, 529 or a timeout, default 4)
GOAL_CONVERGENCE_NOTIFY_TIMEOUT (seconds a notify command may run, default 10) and
GOAL_CONVERGENCE_CHECKPOINT_MAX_MB (the most untracked and changed bytes one checkpoint may store, default 512).
"""

from __future__ import annotations

import os
import tomllib
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..errors import InvalidInput, problems
from ..models import ConditionType, OracleProvider, StoppingCondition, check_target, check_threshold
from ..models.base import TARGET_PATTERN
from ..system.index import home

PROJECT_FILE = ".goal-convergence.toml"


class _Settings(BaseModel):
    # A misspelt key is refused: a setting silently ignored is worse than an error.
    model_config = ConfigDict(extra="forbid", strict=True)


class Check(_Settings):
    type: ConditionType
    command: str = Field(min_length=1)
    threshold: float | None = Field(default=None, ge=0, le=100)
    target: str | None = Field(default=None, pattern=TARGET_PATTERN)
    metric_regex: str | None = None
    runs: int | None = Field(default=None, ge=1, le=25)

    @model_validator(mode="after")
    def _threshold_for_coverage(self) -> Check:
        check_threshold(self.type, self.threshold)
        check_target(self.type, self.target, self.metric_regex, self.runs)
        return self

    def condition(self) -> StoppingCondition:
        return StoppingCondition(type=self.type, command=self.command, threshold=self.threshold, target=self.target,
                                 metric_regex=self.metric_regex, runs=self.runs)


class HeartbeatBudget(_Settings):
    max_iterations: int | None = Field(default=10, ge=0)
    max_duration: str | None = "1h"
    max_dollars: float | None = Field(default=5.0, ge=0)
    max_tokens: int | None = Field(default=None, ge=0)


class HeartbeatConfig(_Settings):
    checks: list[Check] = Field(default_factory=list)
    mode: Literal["goal", "triage"] = "goal"
    max_new_per_hour: int = Field(default=3, ge=0)
    budget: HeartbeatBudget = Field(default_factory=HeartbeatBudget)
    oracle: OracleProvider = "auto"
    oracle_model: str | None = Field(default=None, min_length=1)
    oracle_command: str | None = None
    tests_may_change: bool = False
    min_confidence: float | None = Field(default=None, ge=0, le=1, allow_inf_nan=False)


class ProjectConfig(_Settings):
    notify: str | None = Field(default=None, min_length=1)
    heartbeat: HeartbeatConfig = Field(default_factory=HeartbeatConfig)


class HomeConfig(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    notify: str | None = Field(default=None, min_length=1)


def _read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path} is not valid TOML ({exc}); fix it") from None


def _validated(kind: type[BaseModel], doc: object, where: str) -> BaseModel:
    try:
        return kind.model_validate(doc)
    except ValidationError as exc:
        raise InvalidInput(f"{where}: {problems(exc, 1)}; fix it "
                           f"(the settings are described in docs/heartbeat.md, section Settings)") from None


def project_config(root: Path) -> ProjectConfig:
    """The settings of the project at ``root``: its `.goal-convergence.toml` when there is one, else the
    `[tool.goal-convergence]` table of its pyproject.toml, else the defaults."""
    own = root / PROJECT_FILE
    if own.is_file():
        return _validated(ProjectConfig, _read_toml(own), str(own))  # type: ignore[return-value]
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        table = _read_toml(pyproject).get("tool", {}).get("goal-convergence", {})
        return _validated(ProjectConfig, table, f"{pyproject} [tool.goal-convergence]")  # type: ignore[return-value]
    return ProjectConfig()


def home_config() -> HomeConfig:
    path = home() / "config.toml"
    if not path.is_file():
        return HomeConfig()
    return _validated(HomeConfig, _read_toml(path), str(path))  # type: ignore[return-value]


class EnvSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    oracle_timeout: float = Field(default=120.0, gt=0, allow_inf_nan=False)
    oracle_retries: int = Field(default=4, ge=0)
    notify_timeout: float = Field(default=10.0, gt=0, allow_inf_nan=False)
    # The Stop hook's own budget: well under its timeout in hooks/hooks.json (1800 s), since Claude Code
    # kills a hook that outlives that, and a killed hook decides nothing.
    stop_budget: float = Field(default=1500.0, gt=0, allow_inf_nan=False)
    pristine_max_mb: int = Field(default=2048, gt=0)  # the integrity guard's scratch copy
    checkpoint_max_mb: int = Field(default=512, gt=0)  # what one checkpoint may add to the repository


# Each setting's variable, and a good value for the error message to show.
ENV_VARIABLES = {"oracle_timeout": ("GOAL_CONVERGENCE_ORACLE_TIMEOUT", "120"),
                 "oracle_retries": ("GOAL_CONVERGENCE_ORACLE_RETRIES", "4"),
                 "notify_timeout": ("GOAL_CONVERGENCE_NOTIFY_TIMEOUT", "10"),
                 "stop_budget": ("GOAL_CONVERGENCE_STOP_BUDGET", "1500"),
                 "pristine_max_mb": ("GOAL_CONVERGENCE_PRISTINE_MAX_MB", "2048"),
                 "checkpoint_max_mb": ("GOAL_CONVERGENCE_CHECKPOINT_MAX_MB", "512")}


def env_settings() -> EnvSettings:
    """The settings the environment gives (an unset or empty variable: the default). Raises
    InvalidInput naming the variable when one is not valid."""
    return _env_settings(tuple(os.environ.get(var, "").strip() for var, _ in ENV_VARIABLES.values()))


@cache
def _env_settings(raw: tuple[str, ...]) -> EnvSettings:
    given = {name: value for name, value in zip(ENV_VARIABLES, raw, strict=True) if value}
    try:
        return EnvSettings.model_validate(given)
    except ValidationError as exc:
        name = str(exc.errors()[0]["loc"][0])
        var, example = ENV_VARIABLES[name]
        raise InvalidInput(f"{var}={given[name]!r} is not valid ({exc.errors()[0]['msg']}); unset it or set it to a "
                           f"number like {var}={example}") from None
