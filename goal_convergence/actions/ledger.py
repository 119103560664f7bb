"""The ledger as Markdown, for the job summary: one goal (the run step), and the goals of a whole
matrix fanned back in (the summary job reads each run's ``ledger.json`` from its artifact)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..errors import InvalidInput
from ..models import Goal
from ..report import render
from ..system.text import clip
from . import envfiles
from .inputs import dollars

LEDGER_FILE = "ledger.json"
MARKDOWN_FILE = "ledger.md"
_HINT_CHARS = 300


def cell(text: object) -> str:
    """Text that stays inside one Markdown table cell."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ").strip()


def _mark(met: bool) -> str:
    return "✅" if met else "❌"


def goal_markdown(goal: Goal, ledger: dict, files: list[str]) -> str:
    """One goal's run: how it ended, its budget, its conditions' last results and each iteration."""
    met, stop = ledger["met"], ledger["stop"]
    head = f"### {_mark(met)} `{goal.goal_id}` {'converged' if met else stop}"
    lines = [head, "", f"> {cell(goal.objective)}", "",
             "| stop | exit code | iterations | spent | active time | oracle |", "|---|---|---|---|---|---|",
             f"| {stop} | {ledger['exitCode']} | {goal.spent.iterations}/{goal.budget.max_iterations or '∞'} | "
             f"{render.money(goal.spent.dollars)}"
             f"/{render.money(goal.budget.max_dollars) if goal.budget.max_dollars else '∞'} | "
             f"{render.duration(goal.spent.active_seconds)}/{goal.budget.max_duration or '∞'} | "
             f"{cell(render.oracle_line(goal))} |", ""]
    last = goal.history[-1].conditions if goal.history else []
    results = {e.index: e for e in last}
    lines += ["| condition | command | last result |", "|---|---|---|"]
    for i, c in enumerate(goal.stopping_conditions):
        e = results.get(i)
        result = "not run" if e is None else "✅ pass" if e.passed else f"❌ fail: {cell(clip(e.first_failure, 160))}"
        extra = f" ≥ {c.threshold:g}%" if c.threshold is not None else ""
        lines.append(f"| {c.type}{extra} | `{cell(c.command)}` | {result} |")
    if goal.history:
        lines += ["", "<details><summary>Iterations</summary>", "",
                  "| # | passing | decision | oracle | hint |", "|---|---|---|---|---|"]
        for it in goal.history:
            d = it.decision
            verdict = ("error" if it.judge_error else "-" if it.verdict is None else
                       "agrees" if it.verdict.converged else "not yet")
            lines.append(f"| {it.number} | {sum(c.passed for c in it.conditions)}/{len(it.conditions)} | "
                         f"{d.action if d.action != 'stop' else f'stop: {d.stop_reason}'} | {verdict} | "
                         f"{cell(clip(d.hint or '', _HINT_CHARS))} |")
        lines += ["", "</details>"]
    if not met and goal.escalation:
        lines += ["", f"Escalated ({goal.escalation.stop_reason}): {cell(goal.escalation.detail)}"]
    if files:
        lines += ["", "Kept in the artifact: " + ", ".join(f"`{f}`" for f in files)]
    return "\n".join(lines)


def read_ledgers(folder: Path) -> list[dict]:
    """Every run's ledger under ``folder`` (the downloaded artifacts, one folder each), in goal-id order."""
    found = []
    for path in sorted(Path(folder).rglob(LEDGER_FILE)):
        try:
            ledger = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InvalidInput(f"{path} is not a ledger ({exc}); it is written by the action's run step") from None
        if not isinstance(ledger, dict) or "goalId" not in ledger:
            raise InvalidInput(f"{path} is not a ledger (no goalId); it is written by the action's run step")
        found.append(ledger)
    return sorted(found, key=lambda g: g["goalId"])


def _spent(g: dict) -> str:
    spent = render.money(g.get("totalCostUsd") or 0)
    return f"{spent} of {render.money(g['maxDollars'])}" if g.get("maxDollars") else spent


def fleet_markdown(ledgers: list[dict], folder: Path, budget: float = 0) -> str:
    """The goals of a matrix in one table, then the totals, and the fleet's budget when it had one."""
    if not ledgers:
        return f"### goal-convergence\n\nNo goal ran: no {LEDGER_FILE} was found under `{folder}`."
    met = sum(bool(g["met"]) for g in ledgers)
    cost = sum(g.get("totalCostUsd") or 0 for g in ledgers)
    lines = [f"### goal-convergence: {met} of {len(ledgers)} goals met", "",
             "| | goal | objective | stop | iterations | spent |", "|---|---|---|---|---|---|"]
    lines += [f"| {_mark(bool(g['met']))} | `{cell(g['goalId'])}` | {cell(clip(g.get('objective', ''), 120))} | "
              f"{cell(g['stop'])} | {g.get('turns', 0)} | {_spent(g)} |"
              for g in ledgers]
    total = f"Total spent: {render.money(cost)}"
    lines += ["", f"{total} of the fleet's {render.money(budget)} (max-dollars, split over its goals)." if budget
              else f"{total}."]
    return "\n".join(lines)


def fan_in_step(folder: Path) -> list[dict]:
    """The summary job: every run's ledger under ``folder`` in one job summary, and outputs saying how many met.
    The fleet's max-dollars (``GOAL_INPUT_MAX_DOLLARS``, empty or 0 for none) is stated in it."""
    budget = dollars(os.environ.get("GOAL_INPUT_MAX_DOLLARS", ""), "input max-dollars")
    ledgers = read_ledgers(folder)
    met = sum(bool(g["met"]) for g in ledgers)
    envfiles.add_summary(fleet_markdown(ledgers, folder, budget))
    envfiles.set_outputs({"count": len(ledgers), "met-count": met, "met": "true" if ledgers and met == len(ledgers)
                          else "false", "total-cost-usd": round(sum(g.get("totalCostUsd") or 0 for g in ledgers), 6)})
    return ledgers
