"""A triage item: a goal that needs a person."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..system.index import GOAL_ID_RE
from .base import TRIAGE_ID_RE, Blocker, ConditionType, Model, NonNegInt, PosInt, SchemaVersion, StopReason, Timestamp
from .evidence import Census, Integrity
from .goal import Checkpoint, Spent


class FailingCondition(Model):
    type: ConditionType
    command: str
    first_failure: str | None = None


class BestCheckpoint(Model):
    """The iteration of an escalated goal that came closest (most conditions passing, the latest of equals),
    and the command that brings the project's files back to it."""

    iteration: PosInt
    passing: NonNegInt
    conditions: NonNegInt
    checkpoint: Checkpoint
    restore: str = Field(min_length=1)


class AttemptBest(Model):
    """One parallel attempt of an escalated goal and its closest iteration (``BestCheckpoint`` for that attempt)."""

    attempt: PosInt
    iteration: PosInt
    passing: NonNegInt
    conditions: NonNegInt
    restore: str = Field(min_length=1)


class TriageItem(Model):
    """A goal that needs a person: escalated by the loop or raised by a heartbeat."""

    schema_version: SchemaVersion = 1
    triage_id: str = Field(pattern=TRIAGE_ID_RE.pattern)
    status: Literal["open", "acted", "dismissed"] = "open"
    source: Literal["escalation", "heartbeat", "wave"] = "escalation"
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
    integrity: Integrity | None = Field(default=None, description="The integrity guard's findings at the last "
                                                                   "iteration.")
    start_census: list[Census | None] = Field(default_factory=list)
    best_checkpoint: BestCheckpoint | None = Field(default=None, exclude_if=lambda v: v is None)
    attempts: list[AttemptBest] = Field(default_factory=list, exclude_if=lambda v: not v,
                                        description="With parallel attempts: each attempt's best checkpoint.")
    fingerprint: str | None = None
    count: PosInt = 1
    last_seen: Timestamp | None = None
    created_at: Timestamp
    updated_at: Timestamp
