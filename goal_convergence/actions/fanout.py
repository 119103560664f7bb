"""Fan out: the list of goals a matrix runs, one item a job, each item the action's inputs as a JSON
object (inputs.py). Either given (a JSON list) or found by a heartbeat: the project's checks run once
here, and each failure the heartbeat makes a goal of becomes an item carrying that goal's conditions,
budget and oracle (the project's heartbeat settings), so a matrix job builds the same goal afresh on
its own runner.

The fleet's ``max-dollars`` is a total for all its goals: a goal that names its own budget keeps it, and
the rest share what is left equally (in whole cents, so the shares never add up to more than the total)."""

from __future__ import annotations

import json
import math
import os
import secrets
from collections.abc import Callable
from pathlib import Path

from ..errors import InvalidInput
from ..loop import heartbeat
from ..models import Goal
from ..storage.store import Store
from ..system.text import clip, money
from . import envfiles, ledger
from .inputs import NAMES, Inputs, dollars, flag
from .run import runner_temp

_KINDS = {"test_pass": "test", "lint_clean": "lint", "build_pass": "build"}
NAME_CHARS = 60


def inputs_from_goal(goal: Goal) -> dict:
    """The action's inputs that make this goal again: conditions, budget, oracle."""
    item: dict = {"objective": goal.objective}
    for c in goal.stopping_conditions:
        name = _KINDS.get(c.type)
        if name and name not in item:
            item[name] = c.command
        elif c.type == "coverage_threshold" and "coverage" not in item:
            item.update({"coverage": c.threshold, "coverage-cmd": c.command})
        else:
            item.setdefault("checks", []).append(c.command)
    b, o = goal.budget, goal.oracle
    item.update({"max-iterations": b.max_iterations or 0, "max-duration": b.max_duration or "0s",
                 "max-dollars": b.max_dollars or 0, "oracle": o.provider, "oracle-model": o.model,
                 "stuck-after": goal.stuck_after})
    item.update({k: v for k, v in (("max-tokens", b.max_tokens), ("oracle-cmd", o.command), ("expect", o.expect)) if v})
    if goal.tests_may_change:
        item["tests-may-change"] = True
    return item


def from_list(raw: str) -> list[dict]:
    try:
        items = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"input goals is not JSON ({exc}); give a list like "
                           '[{"objective": "make all tests pass", "test": "pytest -q"}]') from None
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise InvalidInput("input goals must be a JSON list of objects, each the action's inputs for one goal")
    for n, item in enumerate(items):
        unknown = sorted(set(item) - set(NAMES))
        if unknown:
            raise InvalidInput(f"goal {n} of input goals has unknown keys {', '.join(unknown)}; the keys are the "
                               f"action's inputs: {', '.join(sorted(NAMES))}")
        if not str(item.get("objective") or "").strip():
            raise InvalidInput(f"goal {n} of input goals has no objective; each goal says what it is")
    return items


def from_heartbeat(project: Path) -> tuple[list[dict], heartbeat.Report]:
    """Run the project's checks in a throwaway home: the goals the heartbeat makes there become the items."""
    store = Store(runner_temp() / "goal-convergence-heartbeat")
    report = heartbeat.beat(store, project, mode="goal")
    made = [f.tracked.item_id for f in report.findings if f.outcome == "created" and f.tracked]
    return [inputs_from_goal(store.load(Goal, goal_id)) for goal_id in made], report


def split_budget(items: list[dict], total: float) -> list[dict]:
    """Each item with its ``max-dollars``: its own when it names one (above 0), else an equal share of what the
    fleet's ``total`` leaves, or 0 (no limit) when the fleet has no total either."""
    own = [dollars(i.get("max-dollars", 0), f"max-dollars of goal {n}") for n, i in enumerate(items)]
    named, rest = sum(own), sum(1 for d in own if not d)
    if total and named > total:
        raise InvalidInput(f"the goals' own max-dollars add up to {money(named)}, over the fleet's max-dollars "
                           f"{money(total)}; raise the fleet's max-dollars or lower the goals'")
    share = math.floor(round((total - named) * 100 / rest, 6)) / 100 if total and rest else 0.0
    if total and rest and share < 0.01:
        raise InvalidInput(f"the fleet's max-dollars {money(total)} leaves {money(total - named)} for the {rest} "
                           "goal(s) that name no budget; raise it, or give each goal its own max-dollars")
    return [{**item, "max-dollars": d or share} for item, d in zip(items, own, strict=True)]


def _budget_note(item: dict) -> str:
    budget = dollars(item.get("max-dollars", 0), "max-dollars")
    return f" (up to {money(budget)})" if budget else ""


def _named(items: list[dict]) -> list[dict]:
    """Each item with a name for its job (the matrix shows it): its own, else its objective, clipped."""
    return [{**item, "name": clip(str(item.get("name") or item["objective"]).replace("\n", " "), NAME_CHARS)}
            for item in items]


def plan_step(echo: Callable[[str], None] = print) -> list[dict]:
    """The matrix step: the items, as the output ``matrix`` (a JSON list) and ``count``."""
    inputs = Inputs.from_env()
    raw = os.environ.get("GOAL_INPUT_GOALS", "").strip()
    beat = flag(os.environ.get("GOAL_INPUT_HEARTBEAT", ""), "heartbeat")
    total = dollars(os.environ.get("GOAL_INPUT_MAX_DOLLARS", ""), "input max-dollars")
    if bool(raw) == beat:
        raise InvalidInput("give either the input goals (a JSON list) or heartbeat: true, not both or neither")
    if raw:
        items, found = from_list(raw), ""
    else:
        items, report = from_heartbeat(inputs.project(Path(os.environ.get("GITHUB_WORKSPACE") or os.getcwd())))
        found = f"```\n{report.text()}\n```" if report.findings else "The heartbeat found nothing failing."
    items = _named(split_budget(items, total))
    # A name for this fleet's artifacts: a run that calls the workflow twice holds both fleets' artifacts, and
    # each summary job downloads only its own.
    fleet = f"fleet-{secrets.token_hex(4)}"
    envfiles.set_outputs({"matrix": json.dumps(items, ensure_ascii=False), "count": len(items), "fleet": fleet})
    budget = f"Fleet budget: {money(total)} (max-dollars), split over the goals as above." if total else ""
    goals = "\n".join(f"- {ledger.cell(i['name'])}{_budget_note(i)}" for i in items)
    envfiles.add_summary("\n\n".join(filter(None, [f"### goal-convergence: {len(items)} goal(s) to run", goals, budget,
                                                   found])))
    echo(json.dumps(items, indent=2, ensure_ascii=False))
    return items
