"""Makers for headless runs: `claude -p`, `codex exec` or `gemini -p` (resumed session by session), or any shell command.

In Claude Code the session itself is the maker and none of this runs; the Stop hook meters it.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

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
class AgentMaker:
    """What the headless agents' makers share: find the agent's binary, send the first prompt or, in the resumed
    session, the hint, run it in the project with the maker's mark, and read its output into a MakerReport.
    Each agent gives its argv, its environment, and how its output reads (``parse`` and ``reported``, or
    ``report`` whole)."""

    name: ClassVar[str]
    label: ClassVar[str]  # the command as the summaries name it, e.g. "claude -p"
    install: ClassVar[str]  # what to install, or which variable to set, when the binary is not found
    model: str | None = None

    def binary(self) -> str | None:
        raise NotImplementedError

    def argv(self, binary: str, prompt: str, session: str | None, model: str | None, goal: Goal) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        return dict(os.environ)

    def parse(self, out: bytes, err: process.Capture) -> Any:
        """The result the agent printed at the end of its turn; ValidationError when there is none."""
        raise NotImplementedError

    def reported(self, goal: Goal, done: process.Exit, result: Any) -> MakerReport:
        raise NotImplementedError

    def command(self, goal: Goal, hint: str) -> list[str]:
        binary = self.binary()
        if not binary:
            raise MakerError(f"the {self.name} maker needs {self.install}, or use --maker-cmd CMD")
        session = goal.maker.session_id
        prompt = hint_prompt(goal, hint) if session and hint else first_prompt(goal)
        return self.argv(binary, prompt, session, self.model or goal.maker.model, goal)

    def work(self, goal: Goal, hint: str, timeout: float | None,
             cancel: threading.Event | None = None) -> MakerReport:
        out, err = process.Capture(head=_RESULT_BYTES), process.Capture()
        done = process.run(self.command(goal, hint), Path(goal.project_root), out, err=err, timeout=timeout,
                           env={**self.env(), **maker_env(goal)}, cancel=cancel)
        return self.report(goal, done, out, err)

    def report(self, goal: Goal, done: process.Exit, out: process.Capture, err: process.Capture) -> MakerReport:
        if done.cancelled:  # killed before it printed its spend, unknown then (claude's --max-budget-usd bounds it)
            return MakerReport(summary=f"[{self.label} was stopped: the goal ended in another attempt]", failed=True)
        if done.timed_out:
            return MakerReport(summary=f"[{self.label} ran out of the goal's time budget]", failed=True)
        try:
            result = self.parse(bytes(out.head), err)
        except ValidationError:
            tail = (err.last_text() if err.total else out.last_text()).strip()[-500:]
            return MakerReport(summary=f"[{self.label} exited {done.code} without a result: {tail}]", failed=True)
        return self.reported(goal, done, result)


class ClaudeMaker(AgentMaker):
    """Claude Code in print mode: the objective first, then `--resume` of the same session with each hint."""

    name, label = "claude", "claude -p"
    install = "Claude Code: install it (npm install -g @anthropic-ai/claude-code) or set CLAUDE_BIN"

    def binary(self) -> str | None:
        return printmode.binary()

    def argv(self, binary: str, prompt: str, session: str | None, model: str | None, goal: Goal) -> list[str]:
        args = [binary, "-p", prompt, "--output-format", "json", "--permission-mode", "acceptEdits"]
        if session:
            args += ["--resume", session]
        left = budget.dollars_left(goal)
        if left is not None:  # a maker killed with us could not tell us what it spent: it may not pass this
            args += ["--max-budget-usd", f"{max(0.0, left):.4f}"]
        return args + (["--model", model] if model else [])

    def env(self) -> dict[str, str]:
        return printmode.detached_env()

    def parse(self, out: bytes, err: process.Capture) -> PrintResult:
        return PrintResult.model_validate_json(out.strip() or b"{}")

    def reported(self, goal: Goal, done: process.Exit, result: PrintResult) -> MakerReport:
        return MakerReport(
            summary=(result.result or "")[-SUMMARY_CHARS:],
            cost=Cost(dollars=result.total_cost_usd, tokens=result.tokens),
            model=result.main_model,
            failed=result.is_error or done.code != 0,
            session_id=result.session_id,
        )


class CodexMaker(AgentMaker):
    """Codex CLI headless: `codex exec --json` with the objective, then `codex exec resume` of the same session
    with each hint, in its workspace-write sandbox. Its spend is read from the session's rollout file from
    where the last read stopped (storage/rollout.py), so a resumed session is charged once."""

    name, label = "codex", "codex exec"
    install = "Codex CLI: install it (npm install -g @openai/codex) or set CODEX_BIN"

    def binary(self) -> str | None:
        return codexmode.binary()

    def argv(self, binary: str, prompt: str, session: str | None, model: str | None, goal: Goal) -> list[str]:
        _priced(goal, model or codexmode.configured_model())
        args = [binary, "exec", "--json", "--skip-git-repo-check", "--sandbox", "workspace-write",
                *(["--model", model] if model else [])]
        return [*args, "resume", session, prompt] if session else [*args, prompt]

    def report(self, goal: Goal, done: process.Exit, out: process.Capture, err: process.Capture) -> MakerReport:
        # Read whatever the turn printed, stopped or not: the rollout holds what it spent up to the kill.
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
            summary = f"[{self.label} {why}{': ' + tail if tail else ''}]\n{summary}"
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
