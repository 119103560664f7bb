"""Makers for headless runs: `claude -p` (resumed session by session) or any shell command.

In Claude Code the session itself is the maker and none of this runs; the Stop hook meters it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from . import conditions, cost, render
from .engine import MakerReport
from .errors import MakerError
from .models import Cost, Goal

SUMMARY_CHARS = 4000


class Maker(Protocol):
    name: str

    def work(self, goal: Goal, hint: str, goal_file: Path, timeout: float | None) -> MakerReport: ...


def first_prompt(goal: Goal) -> str:
    return "\n".join([
        f"Your goal: {goal.objective}",
        "",
        "It is done only when these checks pass (they run on their own after you stop) and an independent "
        "reviewer agrees:",
        *render.condition_lines(goal),
        "",
        "Work until the goal is met, then stop. Do not weaken, skip or delete the checks or the tests.",
    ])


def hint_prompt(goal: Goal, hint: str) -> str:
    return f"The goal is not met yet: {goal.objective}\n\nWhat the checks and the reviewer found:\n{hint}\n\nKeep going."


@dataclass
class CommandMaker:
    """Any shell command. It gets the hint in GOAL_HINT and the goal file's path in GOAL_FILE."""

    command: str
    name: str = "command"

    def work(self, goal: Goal, hint: str, goal_file: Path, timeout: float | None) -> MakerReport:
        env = {**os.environ, "GOAL_HINT": hint, "GOAL_FILE": str(goal_file), "GOAL_ID": goal.goal_id,
               "GOAL_OBJECTIVE": goal.objective, "GOAL_ITERATION": str(goal.spent.iterations + 1)}
        result = conditions.run_command(self.command, Path(goal.project_root), timeout=timeout, env=env)
        summary = result.tail
        failed = result.timed_out or result.exit_code != 0
        if failed:
            summary = f"[maker exited {result.exit_code}{' (timed out)' if result.timed_out else ''}]\n{summary}"
        return MakerReport(summary=summary[-SUMMARY_CHARS:], failed=failed)


@dataclass
class ClaudeMaker:
    """Claude Code in print mode: the objective first, then `--resume` of the same session with each hint."""

    model: str | None = None
    name: str = "claude"

    def work(self, goal: Goal, hint: str, goal_file: Path, timeout: float | None) -> MakerReport:
        binary = os.environ.get("GOAL_CONVERGENCE_CLAUDE_BIN") or shutil.which("claude")
        if not binary:
            raise MakerError("the claude maker needs Claude Code: install it (npm install -g @anthropic-ai/claude-code) "
                             "or use --maker-cmd CMD")
        session = goal.maker.session_id
        prompt = hint_prompt(goal, hint) if session and hint else first_prompt(goal)
        args = [binary, "-p", prompt, "--output-format", "json", "--permission-mode", "acceptEdits"]
        if session:
            args += ["--resume", session]
        if self.model or goal.maker.model:
            args += ["--model", self.model or goal.maker.model or ""]
        try:
            proc = subprocess.run(args, cwd=goal.project_root, capture_output=True, text=True, timeout=timeout,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return MakerReport(summary="[claude -p timed out]", failed=True)
        try:
            result = json.loads(proc.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            tail = (proc.stderr or proc.stdout)[-500:]
            return MakerReport(summary=f"[claude -p exited {proc.returncode} without a result: {tail}]", failed=True)
        return report_from_result(result, proc.returncode)


def report_from_result(result: dict, returncode: int = 0) -> MakerReport:
    """A maker report from `claude -p --output-format json`'s result object."""
    usage = result.get("usage") or {}
    models = list((result.get("modelUsage") or {}).keys())
    model = max(models, key=lambda m: result["modelUsage"][m].get("costUSD", 0)) if models else None
    return MakerReport(
        summary=str(result.get("result") or "")[-SUMMARY_CHARS:],
        cost=Cost(dollars=float(result.get("total_cost_usd") or 0.0), tokens=cost.usage_tokens(usage)),
        model=model,
        failed=bool(result.get("is_error")) or returncode != 0,
        session_id=result.get("session_id"),
    )
