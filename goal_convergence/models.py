"""pydantic models that mirror the JSON Schemas in ``schemas/`` (the published contract).

Strict mode and ``extra="forbid"`` keep the models exactly as picky as the schemas: a document one
rejects, the other rejects too (tests/test_models_schema.py proves it both ways). Keys are camelCase on
disk and snake_case in Python.
"""

from __future__ import annotations

import re
import secrets
import string
from datetime import UTC, datetime
from typing import Annotated, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr, model_validator
from pydantic.alias_generators import to_camel

from .index import GOAL_ID_RE, OPEN_STATES

TRIAGE_ID_RE = re.compile(r"^tri-[a-z0-9]{8}$")
# [0-9], not \d: \d matches any Unicode digit in Python and in pydantic's regex engine, and a
# timestamp of Arabic-Indic digits would pass the pattern and then fail to parse.
TIMESTAMP_PATTERN = (
    r"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
    r"(\.[0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"
)
DURATION_PATTERN = r"^([0-9]+d)?([0-9]+h)?([0-9]+m)?([0-9]+s)?$"

ConditionType = Literal["test_pass", "lint_clean", "coverage_threshold", "build_pass", "custom_command"]
GoalState = Literal["active", "paused", "converged", "escalated", "failed"]
StopReason = Literal[
    "converged", "unfixable", "stuck", "timeout", "ceiling", "budget-exhausted", "cancelled", "judge-error"
]
Blocker = Literal["needs_user_input", "external_wait", "run_failed"]
Source = Literal["user", "heartbeat", "triage"]
OracleProvider = Literal["auto", "anthropic", "claude-cli", "command", "conditions"]


def _whole(value: object) -> object:
    # JSON Schema counts 3.0 as an integer (and Python's json writes floats that way); strict
    # pydantic would not. Bools stay bools, so `true` is still refused where a number belongs.
    return int(value) if type(value) is float and value.is_integer() else value


Int = Annotated[int, BeforeValidator(_whole)]
Timestamp = Annotated[str, Field(pattern=TIMESTAMP_PATTERN)]
NonNegFloat = Annotated[float, Field(ge=0)]
NonNegInt = Annotated[Int, Field(ge=0)]

# Every end of a run has one stop reason, and that is the headless runner's exit code.
EXIT_CODES: dict[str, int] = {
    "converged": 0,
    "unfixable": 1,
    "stuck": 2,
    "timeout": 3,
    "ceiling": 4,
    "budget-exhausted": 5,
    "cancelled": 6,
    "judge-error": 7,
}
EXIT_ERROR = 70

_ALPHABET = string.ascii_lowercase + string.digits


def new_id(prefix: str) -> str:
    return prefix + "".join(secrets.choice(_ALPHABET) for _ in range(8))


def now_iso(now: datetime | None = None) -> str:
    return (now or datetime.now(UTC)).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_iso(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


M = TypeVar("M", bound="Model")


class Model(BaseModel):
    # str_min_length=0 changes no length rule; it makes pydantic check every string as real Unicode,
    # so a lone surrogate (an undecodable argv byte) is refused here instead of breaking a write.
    model_config = ConfigDict(
        alias_generator=to_camel, validate_by_name=True, validate_by_alias=True, extra="forbid", strict=True,
        validate_assignment=True, allow_inf_nan=False, str_min_length=0,
    )

    @classmethod
    def from_doc(cls: type[M], doc: object) -> M:
        """Validate a document as it is on disk: camelCase keys only, exactly as the schema has them."""
        return cls.model_validate(doc, by_alias=True, by_name=False)

    def dump(self) -> dict:
        return self.model_dump(mode="json", by_alias=True)


class StoppingCondition(Model):
    type: ConditionType
    command: str = Field(min_length=1)
    threshold: float | None = Field(default=None, ge=0, le=100)
    coverage_regex: str | None = None
    description: str | None = None
    timeout_seconds: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _threshold_for_coverage(self) -> StoppingCondition:
        if (self.type == "coverage_threshold") != (self.threshold is not None):
            raise ValueError("threshold is required for coverage_threshold and only for it")
        return self


class Budget(Model):
    max_iterations: Int | None = Field(default=None, ge=1)
    max_duration: str | None = Field(default=None, min_length=2, pattern=DURATION_PATTERN)
    max_dollars: float | None = Field(default=None, gt=0)
    max_tokens: Int | None = Field(default=None, ge=1)

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


class MakerConfig(Model):
    model: str | None = None
    session_id: str | None = None  # the headless `claude -p` maker's own session, resumed each iteration


class Spent(Model):
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


class Rerun(Model):
    passed: bool
    exit_code: Int | None = None
    duration_seconds: NonNegFloat = 0.0
    fingerprint: str = ""


TestOutcome = Literal["passed", "failed", "skipped", "xfailed", "xpassed"]


class Census(Model):
    """How many tests one run of a condition ran, skipped and deselected, as its runner reported them.

    A count is None when the runner's output did not say. The test ids, with each one's outcome, are
    kept in memory only (``outcomes``): the start census keeps them in the goal's baseline folder."""

    runner: str = Field(min_length=1)  # pytest, unittest, jest, vitest, go, cargo
    ran: NonNegInt | None = None  # passed + failed (errors included) + xpassed
    passed: NonNegInt | None = None
    failed: NonNegInt | None = None
    skipped: NonNegInt | None = None
    xfailed: NonNegInt | None = None  # expected failures that failed (xpassed count as ran)
    deselected: NonNegInt | None = None
    ids: NonNegInt = 0  # how many test ids the output named (0: counts only)
    _outcomes: dict[str, TestOutcome] = PrivateAttr(default_factory=dict)

    @property
    def outcomes(self) -> dict[str, TestOutcome]:
        return self._outcomes

    def with_outcomes(self, outcomes: dict[str, TestOutcome]) -> Census:
        self._outcomes = dict(outcomes)
        self.ids = len(outcomes)
        return self

    @property
    def summary(self) -> str:
        """``pytest: 8 ran (7 passed, 1 failed), 1 skipped`` with only the counts the runner gave."""
        ran = f"{self.ran} ran" if self.ran is not None else "tests ran (count unknown)"
        split = ", ".join(f"{n} {w}" for n, w in ((self.passed, "passed"), (self.failed, "failed")) if n is not None)
        rest = [f"{n} {w}" for n, w in ((self.skipped, "skipped"), (self.xfailed, "xfailed"),
                                       (self.deselected, "deselected")) if n]
        return f"{self.runner}: {ran}" + (f" ({split})" if split else "") + "".join(", " + r for r in rest)


class ConditionEvidence(Model):
    """What one run of one stopping condition showed: the ground truth of an iteration."""

    index: NonNegInt
    type: ConditionType
    command: str
    passed: bool
    exit_code: Int | None = None
    timed_out: bool = False
    duration_seconds: NonNegFloat = 0.0
    output_head: str = ""
    output_tail: str = ""
    output_bytes: NonNegInt = 0
    failure_lines: list[str] = Field(default_factory=list)
    coverage: float | None = None
    fingerprint: str = ""
    error: str | None = None
    rerun: Rerun | None = None
    census: Census | None = None

    @property
    def first_failure(self) -> str:
        """What to say first about a failed run: its error, else its first failure line, else how it ended."""
        if self.error:
            return self.error
        if self.failure_lines:
            return self.failure_lines[0]
        return "timed out" if self.timed_out else f"exit {self.exit_code}"


class ConditionResult(Model):
    type: ConditionType
    passed: bool
    output: str = ""


class Unfixable(Model):
    reason: str = Field(min_length=1)
    evidence: list[str] = Field(default_factory=list)


class Verdict(Model):
    converged: bool
    condition_results: list[ConditionResult] = Field(default_factory=list)
    reasons: list[str] = Field(default_factory=list)
    next_hint: str = ""
    confidence: float = Field(default=0.5, ge=0, le=1)
    unfixable: Unfixable | None = None


class Decision(Model):
    action: Literal["converge", "continue", "stop", "recheck"]
    stop_reason: StopReason | None = None
    hint: str = ""
    blocker: Blocker | None = None
    notes: list[str] = Field(default_factory=list)


IssueKind = Literal["test-gone", "test-skipped", "test-xfailed", "test-deselected", "fewer-tests", "census-lost",
                    "pristine-failed", "pristine-unavailable", "goal-edited"]


class IntegrityIssue(Model):
    """One reason the integrity guard refuses to let a green run converge."""

    kind: IssueKind
    subject: str = ""  # the test id, file or command it is about
    detail: str = ""
    condition: NonNegInt | None = None
    since: Int | None = Field(default=None, ge=1)  # the first iteration of an unbroken run that had it


class PristineRun(Model):
    """The conditions run again in a scratch copy of the tree with the check-defining files as the goal began."""

    passed: bool
    duration_seconds: NonNegFloat = 0.0
    restored: list[str] = Field(default_factory=list)  # baseline files put back (bounded)
    removed: list[str] = Field(default_factory=list)  # files the maker added in check-sensitive places
    failures: list[str] = Field(default_factory=list)
    census: list[Census | None] = Field(default_factory=list)


class Integrity(Model):
    """What the guard saw in one iteration: check-defining files changed since the start, the pristine
    re-run, and the issues that keep a green run from converging (unless ``enforced`` is false)."""

    enforced: bool = True
    changed: list[str] = Field(default_factory=list)  # check-defining files edited since the start
    deleted: list[str] = Field(default_factory=list)
    added: list[str] = Field(default_factory=list)  # files added in check-sensitive places
    pristine: PristineRun | None = None
    pristine_note: str = ""  # why there was no pristine run, when there was none
    census: list[Census | None] = Field(default_factory=list)  # the live run's, one per condition
    issues: list[IntegrityIssue] = Field(default_factory=list)

    @property
    def blocks(self) -> bool:
        # An edited goal file is never the objective's doing, so --tests-may-change does not excuse it.
        return any(i.kind == "goal-edited" for i in self.issues) or (self.enforced and bool(self.issues))


class Iteration(Model):
    number: Int = Field(ge=1)
    started_at: Timestamp
    ended_at: Timestamp
    maker_summary: str | None = None
    conditions: list[ConditionEvidence] = Field(default_factory=list)
    tree_fingerprint: str = ""
    verdict: Verdict | None = None
    judge_error: str | None = None
    decision: Decision
    maker_cost: Cost = Field(default_factory=Cost)
    oracle_cost: Cost = Field(default_factory=Cost)
    integrity: Integrity | None = None


class Pending(Model):
    """The iteration in flight: the maker's work is recorded (and charged) before the checks run,
    so a crash during the checks or the oracle call neither loses that spend nor runs the maker twice."""

    number: Int = Field(ge=1)
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
    count: Int = Field(default=1, ge=1)
    last_seen: Timestamp


class ProtectedFile(Model):
    path: str = Field(min_length=1)
    sha256: str | None = None


class Baseline(Model):
    """The check-defining files and the test census as the goal began. The files' content is kept
    under the home (``baselines/``), so the pristine copy can restore them even outside git."""

    files: NonNegInt = 0
    kept_bytes: NonNegInt = 0
    unkept: list[str] = Field(default_factory=list)  # over the size limits: changes seen, not restorable
    census: list[Census | None] = Field(default_factory=list)  # one per condition, from the start run
    note: str = ""


class Goal(Model):
    schema_version: Int = Field(default=1, ge=1, le=1)
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
    project_root: str = Field(min_length=1)
    source: Source = "user"
    heartbeat: HeartbeatMark | None = None
    escalation: Escalation | None = None
    stuck_after: Int = Field(default=3, ge=1)
    protected_files: list[ProtectedFile] = Field(default_factory=list)  # goals made by 0.1: hashes only
    protect: list[str] = Field(default_factory=list)  # --protect patterns, matched again at every check
    tests_may_change: bool = False  # the objective is to change tests: the guard reports but does not block
    baseline: Baseline | None = None
    base_commit: str | None = None
    base_tree: str | None = None
    pending: Pending | None = None
    active_since: Timestamp | None = None
    transcript_offsets: dict[str, NonNegInt] = Field(default_factory=dict)
    history: list[Iteration] = Field(default_factory=list)
    created_at: Timestamp
    updated_at: Timestamp

    @property
    def last_hint(self) -> str:
        for it in reversed(self.history):
            if it.decision.hint:
                return it.decision.hint
        return ""

    @property
    def is_open(self) -> bool:
        return self.state in OPEN_STATES


class FailingCondition(Model):
    type: ConditionType
    command: str
    first_failure: str | None = None


class TriageItem(Model):
    schema_version: Int = Field(default=1, ge=1, le=1)
    triage_id: str = Field(pattern=TRIAGE_ID_RE.pattern)
    status: Literal["open", "acted", "dismissed"] = "open"
    source: Literal["escalation", "heartbeat"] = "escalation"
    goal_id: str | None = Field(default=None, pattern=GOAL_ID_RE.pattern)
    objective: str = Field(min_length=1)
    project_root: str = Field(min_length=1)
    stop_reason: StopReason | None = None
    blocker: Blocker | None = None
    reasons: list[str] = Field(default_factory=list)
    hint: str | None = None
    failing_conditions: list[FailingCondition] = Field(default_factory=list)
    spent: Spent = Field(default_factory=Spent)
    iterations: NonNegInt = 0
    integrity: Integrity | None = None  # the guard's findings at the last iteration
    start_census: list[Census | None] = Field(default_factory=list)
    fingerprint: str | None = None
    count: Int = Field(default=1, ge=1)
    last_seen: Timestamp | None = None
    created_at: Timestamp
    updated_at: Timestamp
