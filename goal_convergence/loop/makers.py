"""Makers for headless runs: `claude -p`, `codex exec` or `gemini -p` (resumed session by session), or any shell command.

In Claude Code the session itself is the maker and none of this runs; the Stop hook meters it.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pydantic import ValidationError

from ..errors import MakerError, PriceUnknown
from ..models import Cost, Goal
from ..models import codex_exec
from ..models.print_result import PrintResult
from ..report import render
from ..rules import budget, plan
from ..storage import cost as pricing
from ..storage import rollout
from ..system import codexmode, insiders, printmode, process
from .engine import MakerReport

SUMMARY_CHARS = 4000
# `claude -p --output-format json` prints one JSON object, its result the session's last message: kept
# whole up to this many bytes.
_RESULT_BYTES = 16 << 20


class Maker(Protocol):
    name: str

    def work(self, goal: Goal, hint: str, timeout: float | None,
             cancel: threading.Event | None = None) -> MakerReport:
        """One turn of work on ``goal`` in its project root; ``cancel``, once set, ends it (its whole process
        group) early: another attempt at the goal won (attempts.py)."""


def maker_env(goal: Goal) -> dict[str, str]:
    """What every maker's environment carries: the mark of a maker at work (insiders.py), for what leaves the
    runner's process tree."""
    return {insiders.ENV: goal.goal_id}


def first_prompt(goal: Goal) -> str:
    tasks = render.open_task_lines(goal)
    return "\n".join([
        f"Your goal: {goal.objective}",
        "",
        "It is done only when these checks pass (they run on their own after you stop) and an independent "
        "reviewer agrees:",
        *render.condition_lines(goal),
        "",
        *([*tasks, ""] if tasks else []),
        "Work until the goal is met, then stop. Do not weaken, skip or delete the checks or the tests.",
    ])


def hint_prompt(goal: Goal, hint: str) -> str:
    tasks = "\n".join(render.open_task_lines(goal))
    return (f"The goal is not met yet: {goal.objective}\n\nWhat the checks and the reviewer found:\n{hint}\n\n"
            + (f"{tasks}\n\n" if tasks else "") + "Keep going.")


@dataclass
class CommandMaker:
    """Any shell command. It gets the hint in GOAL_HINT, the goal's id, objective and iteration in GOAL_ID,
    GOAL_OBJECTIVE and GOAL_ITERATION, and the open tasks of the plan in GOAL_TASKS (one "t1 title" a line); not
    the goal file's path: the judge's state is none of the maker's business (issue 24)."""

    command: str
    name: str = "command"

    def work(self, goal: Goal, hint: str, timeout: float | None,
             cancel: threading.Event | None = None) -> MakerReport:
        env = {**os.environ, **maker_env(goal), "GOAL_HINT": hint, "GOAL_ID": goal.goal_id,
               "GOAL_OBJECTIVE": goal.objective, "GOAL_ITERATION": str(goal.spent.iterations + 1),
               "GOAL_TASKS": "\n".join(f"{t.id} {t.title}" for t in plan.open_tasks(goal.tasks))}
        result = process.run_command(self.command, Path(goal.project_root), timeout=timeout, env=env, cancel=cancel)
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

    def command(self, goal: Goal, hint: str) -> list[str]:
        binary = printmode.binary()
        if not binary:
            raise MakerError("the claude maker needs Claude Code: install it (npm install -g @anthropic-ai/claude-code) "
                             "or set CLAUDE_BIN, or use --maker-cmd CMD")
        session = goal.maker.session_id
        prompt = hint_prompt(goal, hint) if session and hint else first_prompt(goal)
        args = [binary, "-p", prompt, "--output-format", "json", "--permission-mode", "acceptEdits"]
        if session:
            args += ["--resume", session]
        left = budget.dollars_left(goal)
        if left is not None:  # a maker killed with us could not tell us what it spent: it may not pass this
            args += ["--max-budget-usd", f"{max(0.0, left):.4f}"]
        model = self.model or goal.maker.model
        return args + (["--model", model] if model else [])

    def work(self, goal: Goal, hint: str, timeout: float | None,
             cancel: threading.Event | None = None) -> MakerReport:
        out, err = process.Capture(head=_RESULT_BYTES), process.Capture()
        done = process.run(self.command(goal, hint), Path(goal.project_root), out, err=err, timeout=timeout,
                           env={**printmode.detached_env(), **maker_env(goal)}, cancel=cancel)
        if done.cancelled:  # killed with its session's cost unknown: --max-budget-usd bounded what it could spend
            return MakerReport(summary="[claude -p was stopped: the goal ended in another attempt]", failed=True)
        if done.timed_out:
            return MakerReport(summary="[claude -p ran out of the goal's time budget]", failed=True)
        try:
            result = PrintResult.model_validate_json(bytes(out.head).strip() or b"{}")
        except ValidationError:
            tail = (err.last_text() if err.total else out.last_text()).strip()[-500:]
            return MakerReport(summary=f"[claude -p exited {done.code} without a result: {tail}]", failed=True)
        return MakerReport(
            summary=(result.result or "")[-SUMMARY_CHARS:],
            cost=Cost(dollars=result.total_cost_usd, tokens=result.tokens),
            model=result.main_model,
            failed=result.is_error or done.code != 0,
            session_id=result.session_id,
        )


@dataclass
class CodexMaker:
    """Codex CLI headless: `codex exec --json` with the objective, then `codex exec resume` of the same session
    with each hint, in its workspace-write sandbox. Its spend is read from the session's rollout file from
    where the last read stopped (storage/rollout.py), so a resumed session is charged once."""

    model: str | None = None
    name: str = "codex"

    def command(self, goal: Goal, hint: str) -> list[str]:
        binary = codexmode.binary()
        if not binary:
            raise MakerError("the codex maker needs Codex CLI: install it (npm install -g @openai/codex) or set "
                             "CODEX_BIN, or use --maker-cmd CMD")
        session = goal.maker.session_id
        prompt = hint_prompt(goal, hint) if session and hint else first_prompt(goal)
        model = self.model or goal.maker.model
        _priced(goal, model or codexmode.configured_model())
        args = [binary, "exec", "--json", "--skip-git-repo-check", "--sandbox", "workspace-write",
                *(["--model", model] if model else [])]
        return [*args, "resume", session, prompt] if session else [*args, prompt]

    def work(self, goal: Goal, hint: str, timeout: float | None,
             cancel: threading.Event | None = None) -> MakerReport:
        out, err = process.Capture(head=_RESULT_BYTES), process.Capture()
        done = process.run(self.command(goal, hint), Path(goal.project_root), out, err=err, timeout=timeout,
                           env={**os.environ, **maker_env(goal)}, cancel=cancel)
        result = codex_exec.parse(bytes(out.head).decode("utf-8", "replace"))
        reading = rollout.Reading()
        path = codexmode.rollout_path(result.thread_id or "")
        if path is not None:
            reading = rollout.read(path, goal.transcript_offsets, model=self.model or goal.maker.model)
        elif result.tokens:  # no rollout to read (an ephemeral session): the turns' own usage, unpriced
            reading.tokens = result.tokens
        failed = done.cancelled or done.timed_out or done.code != 0 or not result.completed
        summary = result.message or ""
        if failed:
            why = "was stopped" if done.cancelled else "ran out of time" if done.timed_out else f"exited {done.code}"
            tail = result.error or (err.last_text() if err.total else "").strip()[-500:]
            summary = f"[codex exec {why}{': ' + tail if tail else ''}]\n{summary}"
        return MakerReport(summary=summary[-SUMMARY_CHARS:], cost=Cost(dollars=reading.dollars, tokens=reading.tokens),
                           model=reading.model, transcript_offsets=reading.offsets, failed=failed,
                           session_id=result.thread_id or goal.maker.session_id)


def _priced(goal: Goal, model: str | None) -> None:
    """Refuse to run a model whose dollars cannot be counted unless a token budget bounds the goal: an unpriced
    turn is charged in tokens only, and a dollar budget alone would never stop the loop."""
    if model is None or goal.budget.max_tokens is not None:
        return
    try:
        pricing.price_for(model)
    except PriceUnknown:
        raise MakerError(f"no price for the Codex model {model!r}, so the maker's dollars cannot be counted; give "
                         f"the goal a token budget (--max-tokens N) or add the price to "
                         f"{pricing.user_prices_path()}") from None


def choose(maker: str | None, maker_cmd: str | None, model: str | None) -> Maker:
    """The maker `goal run` was asked for: a command, Codex CLI, Gemini CLI, or Claude Code (the default)."""
    if maker_cmd:
        return CommandMaker(maker_cmd)
    if maker == "gemini":
        from .gemini import GeminiMaker

        return GeminiMaker(model)
    return CodexMaker(model) if maker == "codex" else ClaudeMaker(model)
