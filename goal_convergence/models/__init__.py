"""The data shapes of goal-convergence, one module a concept; the names the rest of the code imports."""

from ..system.index import GOAL_ID_RE
from .base import (DURATION_PATTERN, EXIT_CODES, TRIAGE_ID_RE, Blocker, ConditionType, Model, StopReason, new_id,
                   now_iso, parse_iso)
from .evidence import (Baseline, Census, ConditionEvidence, Integrity, IntegrityIssue, PristineRun, Regression,
                       Rerun, TestOutcome)
from .goal import (MAX_ATTEMPTS, Budget, Checkpoint, ChildGroup, ClockMark, Cost, Escalation, Goal, HeartbeatMark,
                   Iteration, MakerConfig, OracleConfig, OracleProvider, Pending, ProtectedFile, RunChildren, Runner,
                   SettingChange, SettingsChange, Spent, StoppingCondition, Task, check_target, check_threshold)
from .triage import AttemptBest, BestCheckpoint, FailingCondition, TriageItem
from .verdict import ConditionResult, Decision, TaskChanges, Unfixable, Verdict

__all__ = [
    "DURATION_PATTERN", "EXIT_CODES", "GOAL_ID_RE", "MAX_ATTEMPTS", "TRIAGE_ID_RE", "AttemptBest", "Baseline", "BestCheckpoint", "Blocker", "Budget",
    "Census", "Checkpoint", "ChildGroup", "ClockMark", "ConditionEvidence", "ConditionResult", "ConditionType", "Cost", "Decision", "Escalation",
    "FailingCondition", "Goal", "HeartbeatMark", "Integrity", "IntegrityIssue", "Iteration", "MakerConfig", "Model",
    "OracleConfig", "OracleProvider", "Pending", "PristineRun", "ProtectedFile", "Regression", "Rerun", "RunChildren", "Runner",
    "SettingChange", "SettingsChange", "Spent", "StopReason", "StoppingCondition", "Task", "TaskChanges", "TestOutcome", "TriageItem",
    "Unfixable", "Verdict", "check_target", "check_threshold", "new_id", "now_iso", "parse_iso",
]
