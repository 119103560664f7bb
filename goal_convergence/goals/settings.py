"""What flags change on an existing goal (its budget and judge), recorded in its settings history."""

from __future__ import annotations

from datetime import datetime

from ..errors import UsageError
from ..models import Goal, SettingChange, SettingsChange, now_iso
from ..rules import plan
from .specs import make_budget, oracle_config

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
