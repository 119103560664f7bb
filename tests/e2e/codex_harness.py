"""Drive the real Codex CLI (from npm), with this checkout's Codex plugin installed from its marketplace,
against the scripted Responses API (tests/fakeopenai.py) and, for the goal's oracle, the scripted
Messages API (tests/fakeapi.py).

The scripted maker knows its turn by the number of goal-convergence Stop feedbacks it was sent (each
one a user message of Codex's next prompt) and its step by the number of its own calls since then.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.e2e.harness import FEEDBACK_MARK, ORACLE_MARK, oracle_verdict
from tests.fakeapi import FakeAPI, text
from tests.fakeopenai import FakeOpenAI, Reply, say, texts

MAKER_MODEL = "gpt-5.1-codex"
GOAL_PROMPT = "$goal fix both bugs in calc.py --test 'python3 test_calc.py' --oracle anthropic --max-iterations 6"


def find_codex() -> str | None:
    """The real Codex CLI: $CODEX_BIN (.ci/run sets it), the npm package in the checkout, or PATH."""
    vendor = "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
    candidates = [os.environ.get("CODEX_BIN"), str(REPO / vendor), shutil.which("codex")]
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


def codex_bin() -> str:
    found = find_codex()
    if not found:
        if os.environ.get("CI"):
            pytest.fail("the Codex CLI binary is missing; .ci/run installs it from npm (@openai/codex)")
        pytest.skip("Codex CLI binary not installed (npm install @openai/codex; or set CODEX_BIN)")
    return found


def maker_turn(body: dict) -> tuple[int, int]:
    """(turn, step) of a maker request: feedbacks received, and the maker's own outputs since the last one."""
    items = body.get("input", [])
    marks = [i for i, item in enumerate(items)
             if item.get("type") == "message" and item.get("role") == "user"
             and FEEDBACK_MARK in "\n".join(texts({"input": [item]}))]
    start = marks[-1] if marks else 0
    for i, item in enumerate(items):  # a new turn of the user's own (a second session's prompt) starts over
        if item.get("type") == "message" and item.get("role") == "user" and i > start and not marks:
            start = i
    step = sum(1 for item in items[start:] if item.get("type") in ("function_call", "custom_tool_call"))
    return len(marks), step


@dataclass
class MakerScript:
    """The maker's plan: turn -> its steps (a Reply each), the last one a text that ends the turn."""

    plan: dict[int, list[Reply]] | Callable[[dict], Reply]
    requests: list[dict] = field(default_factory=list)

    def __call__(self, body: dict) -> Reply:
        self.requests.append(body)
        if callable(self.plan):
            return self.plan(body)
        turn, step = maker_turn(body)
        steps = self.plan.get(turn, [])
        return steps[step] if step < len(steps) else say("Done: the goal is met.")

    def shown(self) -> list[str]:
        """Everything the maker was shown, in its last request."""
        return texts(self.requests[-1]) if self.requests else []


@dataclass
class OracleScript:
    hint: str = "look at the failing test"
    requests: list[dict] = field(default_factory=list)

    def __call__(self, body: dict):
        self.requests.append(body)
        return text(json.dumps(oracle_verdict(body, lambda _: self.hint)))


class Codex:
    """`codex exec` in ``project`` with HOME at ``home``, the plugin installed from this checkout, `goal` on PATH."""

    def __init__(self, binary: str, openai: FakeOpenAI, anthropic: FakeAPI, home: Path, project: Path) -> None:
        self.binary, self.openai, self.anthropic, self.home, self.project = binary, openai, anthropic, home, project
        self.codex_home = home / ".codex"
        openai.codex_config(self.codex_home, MAKER_MODEL)
        install = (["plugin", "marketplace", "add", str(REPO)], ["plugin", "add", "goal-convergence@goal-convergence"])
        for args in install:
            done = subprocess.run([binary, *args], env=self.env(), capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, f"codex {' '.join(args)}: {done.stdout}\n{done.stderr}"

    def env(self) -> dict[str, str]:
        path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
        env = self.anthropic.claude_env(self.home, PATH=path, GOAL_CONVERGENCE_HOME=str(self.home / ".claude"),
                                        GOAL_CONVERGENCE_ORACLE_RETRIES="0")
        env.update(CODEX_HOME=str(self.codex_home), OPENAI_API_KEY="sk-fake")
        return env

    def run(self, prompt: str, *, resume: str | None = None, model: str | None = None,
            timeout: float = 240) -> list[dict]:
        """One `codex exec --json` session (or a resumed one), on the configured model or ``model``; returns its
        events."""
        # Hooks in `codex exec` run only when trusted: here, for this invocation, with the documented flag.
        flags = ["--json", "--dangerously-bypass-hook-trust", "--dangerously-bypass-approvals-and-sandbox",
                 "--skip-git-repo-check", *(["--model", model] if model else [])]
        args = [self.binary, "exec", *flags, *(["resume", resume] if resume else []), prompt]
        done = subprocess.run(args, cwd=self.project, env=self.env(), capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
        events = []
        for line in done.stdout.splitlines():
            try:
                events.append(json.loads(line))
            except ValueError:
                continue
        if not any(e.get("type") == "thread.started" for e in events):
            raise AssertionError(f"codex exited {done.returncode} without a thread:\n{done.stdout}\n{done.stderr}")
        self.last_stderr = done.stderr
        return events


def thread_id(events: list[dict]) -> str:
    return next(e["thread_id"] for e in events if e.get("type") == "thread.started")


def oracle_mark() -> str:
    return ORACLE_MARK
