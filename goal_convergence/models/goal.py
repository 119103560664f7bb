"""A goal: what it must reach, what it may spend, and the ledger of its iterations."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from ..system.index import GOAL_ID_RE
from .base import (DURATION_PATTERN, TARGET_PATTERN, TRIAGE_ID_RE, Blocker, ConditionType, Model, NonNegFloat,
                   NonNegInt, PosInt, SchemaVersion, StopReason, Timestamp)
from .evidence import Baseline, ConditionEvidence, Integrity, Regression
from .verdict import Decision, Verdict

# Makers racing on one goal: each runs its checks too, so past a few they mostly queue for the machine.
MAX_ATTEMPTS = 8
GoalState = Literal["active", "paused", "converged", "escalated", "failed"]
Source = Literal["user", "heartbeat", "triage"]
OracleProvider = Literal["auto", "anthropic", "claude-cli", "codex-cli", "gemini-cli", "command", "conditions"]


class StoppingCondition(Model):
    # The rules _threshold_for_coverage enforces, said in the schema's words (pydantic cannot derive them).
    model_config = ConfigDict(json_schema_extra={"allOf": [
        {"if": {"properties": {"type": {"const": "coverage_threshold"}}},
         "then": {"required": ["threshold"], "properties": {"threshold": {"type": "number"}}},
         "else": {"properties": {"threshold": {"type": "null"}}}},
        {"if": {"properties": {"type": {"const": "metric"}}},
         "then": {"required": ["target"]},
         "else": {"not": {"anyOf": [{"required": ["target"]}, {"required": ["metricRegex"]}, {"required": ["runs"]}]}}},
    ]})

    type: ConditionType
    command: str = Field(min_length=1)
    threshold: float | None = Field(default=None, ge=0, le=100)
    coverage_regex: str | None = None
    description: str | None = None
    timeout_seconds: float | None = Field(default=None, gt=0)
    # A metric's: left out of the file for the other kinds, so goals written before them save back as they were.
    target: str | None = Field(default=None, pattern=TARGET_PATTERN, exclude_if=lambda v: v is None,
                               description="For a metric: the comparison its number must meet, e.g. '<= 0'.")
    metric_regex: str | None = Field(default=None, exclude_if=lambda v: v is None,
                                     description="For a metric: a regex whose first group is the number "
                                                 "(default: the last number in the output).")
    runs: int | None = Field(default=None, ge=1, le=25, exclude_if=lambda v: v is None,
                             description="For a metric: runs of the command, of which the median counts.")

    @model_validator(mode="after")
    def _threshold_for_coverage(self) -> StoppingCondition:
        check_threshold(self.type, self.threshold)
        check_target(self.type, self.target, self.metric_regex, self.runs)
        return self


def check_threshold(kind: str, threshold: float | None) -> None:
    """A coverage check needs the percentage to reach, and no other kind of check takes one."""
    if (kind == "coverage_threshold") != (threshold is not None):
        raise ValueError("a coverage_threshold condition needs a threshold (`threshold = PCT` in a settings file, "
                         "--coverage PCT on the command line), and only that type takes one")


def check_target(kind: str, target: str | None, regex: str | None, runs: int | None) -> None:
    """A metric needs the target its number must meet, and only a metric takes a target, a regex or runs."""
    if (kind == "metric") != (target is not None):
        raise ValueError("a metric condition needs a target (`target = '<= 0'` in a settings file, --target on "
                         "the command line), and only that type takes one")
    if kind != "metric" and (regex is not None or runs is not None):
        raise ValueError("metricRegex and runs apply to a metric condition only")


def _one_limit_at_least(schema: dict[str, Any]) -> None:
    # The rule _at_least_one_limit enforces, said in the schema's words: some limit is there and not null.
    schema["anyOf"] = [{"required": [key], "properties": {key: {"not": {"type": "null"}}}}
                       for key in schema["properties"]]


class Budget(Model):
    """Lifetime limits; at least one is required."""

    model_config = ConfigDict(json_schema_extra=_one_limit_at_least)

    max_iterations: PosInt | None = None
    max_duration: str | None = Field(default=None, min_length=2, pattern=DURATION_PATTERN)
    max_dollars: float | None = Field(default=None, gt=0)
    max_tokens: PosInt | None = None

    @model_validator(mode="after")
    def _at_least_one_limit(self) -> Budget:
        if not any(v is not None for v in (self.max_iterations, self.max_duration, self.max_dollars, self.max_tokens)):
            raise ValueError("a budget needs at least one limit")
        return self


class OracleConfig(Model):
    provider: OracleProvider = "auto"
    model: str = Field(min_length=1)
    command: str | None = None
    expect: str | None = None
    # Left out of the file while unset, so goals written by 0.1.0 save back as they were.
    may_read: list[str] | None = Field(default=None, exclude_if=lambda v: v is None, description="Globs of project paths the oracle's tools may "
                                       "read although they look like secrets or are hard-linked (.env, *.pem, ...).")


class MakerConfig(Model):
    model: str | None = None
    session_id: str | None = Field(default=None, description="The headless `claude -p` maker's own session, "
                                                             "resumed each iteration.")
    attempts: int | None = Field(default=None, ge=1, le=MAX_ATTEMPTS, exclude_if=lambda v: v is None,
                                 description="How many makers `goal run` races on the goal by default, each in a "
                                             "worktree of its own (attempts.py); unset: one, in the project.")


class Spent(Model):
    """Lifetime spend. Counters only go up; they survive pause, resume, crashes and new sessions."""

    iterations: NonNegInt = 0
    active_seconds: NonNegFloat = 0.0
    maker_dollars: NonNegFloat = 0.0
    oracle_dollars: NonNegFloat = 0.0
    maker_tokens: NonNegInt = 0
    oracle_tokens: NonNegInt = 0

    @property
    def dollars(self) -> float:
        return self.maker_dollars + self.oracle_dollars

    @property
    def tokens(self) -> int:
        return self.maker_tokens + self.oracle_tokens


class Cost(Model):
    dollars: NonNegFloat = 0.0
    tokens: NonNegInt = 0

    def __add__(self, other: Cost) -> Cost:
        return Cost(dollars=self.dollars + other.dollars, tokens=self.tokens + other.tokens)


class Checkpoint(Model):
    """A snapshot of the working tree after an iteration's checks (tracked and untracked files, ignored ones
    left out): a commit object kept under ``refs/goal-convergence/GOAL-ID/N``, outside the user's branches."""

    commit: str = Field(pattern=r"^[0-9a-f]{40,64}$")
    ref: str = Field(min_length=1)
    changed: list[str] = Field(default_factory=list, exclude_if=lambda v: not v,
                               description="The files this checkpoint changed from its parent (at most 20).")
    changed_count: NonNegInt = Field(default=0, exclude_if=lambda v: not v, description="How many there were.")


class Task(Model):
    """One step of the goal's plan, seeded with `goal new --task` or added by the judge."""

    id: str = Field(pattern=r"^t[1-9][0-9]*$")
    title: str = Field(min_length=1)
    state: Literal["open", "done"] = "open"
    added_by: Literal["user", "oracle"] = "user"
    added_in: NonNegInt = Field(default=0, description="The iteration that added it; 0 when the goal was made.")
    done_in: PosInt | None = Field(default=None, exclude_if=lambda v: v is None)


class Iteration(Model):
    number: PosInt
    started_at: Timestamp
    ended_at: Timestamp
    maker_summary: str | None = None
    conditions: list[ConditionEvidence] = Field(default_factory=list)
    tree_fingerprint: str = ""
    verdict: Verdict | None = None
    judged_by: str | None = Field(default=None, exclude_if=lambda v: v is None,
                                  description="Who gave the verdict: the oracle's model, `conditions` (no model) or "
                                              "`command: CMD`.")
    judge_error: str | None = None
    decision: Decision
    maker_cost: Cost = Field(default_factory=Cost)
    oracle_cost: Cost = Field(default_factory=Cost)
    integrity: Integrity | None = None
    checkpoint: Checkpoint | None = Field(default=None, exclude_if=lambda v: v is None)
    attempt: PosInt | None = Field(default=None, exclude_if=lambda v: v is None,
                                   description="Which of the goal's parallel attempts made it (`goal run --attempts`).")
    regressions: list[Regression] = Field(default_factory=list, exclude_if=lambda v: not v,
                                          description="Checks and tests that passed before and fail since.")


class Pending(Model):
    """The iteration in flight: the maker's work is recorded (and charged) before the checks run,
    so a crash during the checks or the oracle call neither loses that spend nor runs the maker twice."""

    number: PosInt
    started_at: Timestamp
    maker_summary: str | None = None
    maker_cost: Cost = Field(default_factory=Cost)
    maker_failed: bool = False


class Escalation(Model):
    stop_reason: StopReason
    blocker: Blocker | None = None
    detail: str = ""
    triage_id: str | None = Field(default=None, pattern=TRIAGE_ID_RE.pattern)
    at: Timestamp


class HeartbeatMark(Model):
    """On a goal a heartbeat made: the failure it was made for, and how often a heartbeat has seen it since."""

    fingerprint: str = Field(min_length=1)
    count: PosInt = 1
    last_seen: Timestamp


class ProtectedFile(Model):
    path: str = Field(min_length=1)
    sha256: str | None = None


SettingValue = str | int | float | None


class SettingChange(Model):
    setting: str = Field(min_length=1, description="The setting's name as on disk: maxIterations, oracleModel, ...")
    before: SettingValue = None
    after: SettingValue = None


class SettingsChange(Model):
    """Settings changed on an existing goal (`goal run ID --max-iterations 25`, `goal resume ID ...`)."""

    at: Timestamp
    via: str = Field(min_length=1, description="The command that changed them.")
    changes: list[SettingChange] = Field(min_length=1)


class Runner(Model):
    """The one `goal run` working a goal (claim.py): who it is, and its signs of life."""

    pid: PosInt
    host: str = Field(min_length=1)
    started: NonNegInt | None = Field(default=None, description="The process's start time in clock ticks since "
                                                                 "boot (/proc/PID/stat): tells a reused pid apart.")
    since: Timestamp
    seen_at: Timestamp = Field(description="Refreshed every few seconds while it runs: time after it is never "
                                           "charged to the goal.")
    beats: NonNegInt = Field(default=0, description="Its heartbeats so far: it is live while this keeps moving, as "
                                                    "the observer's own clock judges, whatever the two hosts' clocks "
                                                    "say.")


class ClockMark(Model):
    """The monotonic clock's reading when a wall-clock stamp was taken, and the boot it is of (system/clock.py)."""

    since: Timestamp = Field(description="The wall-clock stamp it marks; the mark of any other one is no mark.")
    boot: str = Field(min_length=1)
    at: float = Field(allow_inf_nan=False, description="Seconds on the boot's monotonic clock.")


class ChildGroup(Model):
    pgid: PosInt
    started: NonNegInt | None = None  # the start time of the child that made the group (orphans.py)


class RunChildren(Model):
    """The side file `goal run` keeps next to the goals (``runs/GOAL-ID.children.json``): the process groups
    of its live children, reaped by whoever finds it dead (orphans.py)."""

    pid: PosInt
    host: str = Field(min_length=1)
    started: NonNegInt | None = None
    groups: list[ChildGroup] = Field(default_factory=list)


def _sealed(schema: dict[str, Any]) -> None:
    # The seal the store puts last in every goal file it writes (system/seal.py): not a field of the
    # model, since a file cannot vouch for itself; the store checks and removes it before validation.
    schema["properties"]["seal"] = {
        "type": "object", "required": ["mac"], "additionalProperties": False,
        "description": "HMAC-SHA256 of the file's text before it and of its name, with the home's seal.key.",
        "properties": {"mac": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                       "tampered": {"type": "string", "description": "Why the goal was found tampered, "
                                                                     "kept until it is escalated."}}}


class Goal(Model):
    """One goal: its objective, stopping conditions, budget, state and evidence ledger."""

    model_config = ConfigDict(json_schema_extra=_sealed)

    schema_version: SchemaVersion = 1
    goal_id: str = Field(pattern=GOAL_ID_RE.pattern)
    objective: str = Field(min_length=1)
    stopping_conditions: list[StoppingCondition] = Field(min_length=1)
    budget: Budget
    oracle: OracleConfig
    maker: MakerConfig = Field(default_factory=MakerConfig)
    state: GoalState = "active"
    stop_reason: StopReason | None = None
    spent: Spent = Field(default_factory=Spent)
    session_id: str | None = None
    agent: Literal["claude-code", "codex", "gemini-cli"] = Field(
        default="claude-code", exclude_if=lambda v: v == "claude-code",
        description="The agent whose session holds the goal, set when a session binds it: a goal made in one "
                    "agent can be resumed in another on the same project.")
    project_root: str = Field(min_length=1)
    source: Source = "user"
    heartbeat: HeartbeatMark | None = None
    escalation: Escalation | None = None
    stuck_after: PosInt = 3
    protected_files: list[ProtectedFile] = Field(default_factory=list,
                                                 description="In goals made by 0.1 only: files and their hashes.")
    protect: list[str] = Field(default_factory=list, description="--protect patterns, matched again at every check.")
    tests_may_change: bool = Field(default=False, description="The objective is to change tests: the integrity "
                                                              "guard reports but does not block.")
    baseline: Baseline | None = None
    base_commit: str | None = None
    base_tree: str | None = None
    pending: Pending | None = None
    active_since: Timestamp | None = None
    active_mark: ClockMark | None = Field(default=None, exclude_if=lambda v: v is None,
                                          description="The monotonic clock when the active clock started at "
                                                      "activeSince: its time is measured on it (rules/budget.py).")
    transcript_offsets: dict[str, NonNegInt] = Field(default_factory=dict)
    # Fields added since 0.1.0 stay out of the file while unset, so a goal written by 0.1.0 saves back byte for byte.
    transcript_since: Timestamp | None = Field(default=None, exclude_if=lambda v: v is None,
                                               description="Resumed at: the next transcript read skips what was spent "
                                                           "before (while the goal was not active).")
    runner: Runner | None = Field(default=None, exclude_if=lambda v: v is None)
    history: list[Iteration] = Field(default_factory=list)
    tasks: list[Task] = Field(default_factory=list, exclude_if=lambda v: not v,
                              description="The plan: the goal converges only once none is open.")
    min_confidence: float | None = Field(default=None, ge=0, le=1, exclude_if=lambda v: v is None,
                                         description="A converged verdict less confident than this is a veto.")
    accepted_at: Timestamp | None = Field(default=None, exclude_if=lambda v: v is None,
                                          description="When a person accepted a green run flagged by the tripwires "
                                                      "(`goal triage act ID accept`): it converged on their word.")
    checkpoints_off: str | None = Field(default=None, exclude_if=lambda v: v is None,
                                        description="Why no checkpoint is taken (outside git, tree too large).")
    settings_history: list[SettingsChange] = Field(default_factory=list, exclude_if=lambda v: not v,
                                                   description="Budget, oracle and maker settings changed "
                                                               "after the goal was made, oldest first.")
    created_at: Timestamp
    updated_at: Timestamp
    # Set by the store when the file's seal does not hold (system/seal.py): what changed, as known.
    # Not a field: the file cannot vouch for itself.
    _tampered: str | None = PrivateAttr(default=None)

    @property
    def tampered(self) -> str | None:
        """Why this goal's file cannot be trusted (edited outside goal-convergence), or None."""
        return self._tampered

    def mark_tampered(self, detail: str | None) -> None:
        self._tampered = detail

    @property
    def last_hint(self) -> str:
        for it in reversed(self.history):
            if it.decision.hint:
                return it.decision.hint
        return ""


HIDDEN = "(hidden from the maker; it is in the goal file)"


def shown(goal: Goal) -> dict:
    """The goal document as commands print it: whole, but for the expectation the maker's words are checked
    against (``--expect``), which no maker may learn from a command it can run (issue: hidden expectations)."""
    doc = goal.dump()
    if doc["oracle"].get("expect"):
        doc["oracle"]["expect"] = HIDDEN
    for change in doc.get("settingsHistory", []):
        for item in change["changes"]:
            if item["setting"] == "expect":
                item["before"], item["after"] = (HIDDEN if item["before"] else None), (HIDDEN if item["after"] else None)
    return doc
