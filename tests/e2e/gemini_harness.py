"""Drive the real Gemini CLI (from npm), with this checkout's extension linked, against a scripted Gemini API.

The maker is Gemini CLI, talking to tests/fakegemini.py; the goal's oracle is the `anthropic` provider,
talking to tests/fakeapi.py (the judge differs from the maker). The maker's turn is the number of
goal-convergence feedbacks it has been sent (AfterAgent's deny reason becomes the next prompt); its step is
the number of its own messages since the last one.
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

from goal_convergence.system.geminimode import PIN
from tests.conftest import REPO
from tests.e2e.harness import oracle_verdict
from tests.fakeapi import FakeAPI, text
from tests.fakegemini import MODEL, FakeGemini, Refusal, Reply, call, say

EXTENSION = REPO / "gemini-extension"
FEEDBACK_MARK = "is not done yet"
ORACLE_MARK = "You are the oracle of goal-convergence"
# Settings of a test home: an API key (the base URL goes with it), no usage statistics, no update checks.
SETTINGS = {"security": {"auth": {"selectedType": "gemini-api-key"}}, "privacy": {"usageStatisticsEnabled": False},
            "general": {"disableAutoUpdate": True, "disableUpdateNag": True}, "telemetry": {"enabled": False}}


def gemini_binary() -> str:
    """The pinned Gemini CLI: $GEMINI_BIN (.ci/run sets it), else one installed in the checkout, else PATH's."""
    for candidate in (os.environ.get("GEMINI_BIN"), str(REPO / "node_modules/.bin/gemini"), shutil.which("gemini")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    why = (f"Gemini CLI is not installed: `npm install --prefix DIR @google/gemini-cli@{PIN}` and set "
           "GEMINI_BIN=DIR/node_modules/.bin/gemini (.ci/run does)")
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)


def fix(path: Path, old: str, new: str) -> Reply:
    return call("replace", {"file_path": str(path), "old_string": old, "new_string": new,
                            "instruction": "fix the bug"})


def read(path: Path) -> Reply:
    return call("read_file", {"file_path": str(path)})


def shell(command: str) -> Reply:
    return call("run_shell_command", {"command": command, "description": "run it"})


@dataclass
class Conversation:
    body: dict

    @property
    def contents(self) -> list[dict]:
        return self.body.get("contents", [])

    @staticmethod
    def text_of(content: dict) -> str:
        parts = []
        for part in content.get("parts", []):
            if "text" in part:
                parts.append(part["text"])
            elif "functionResponse" in part:
                parts.append(json.dumps(part["functionResponse"].get("response", {})))
        return "\n".join(parts)

    def _feedbacks(self) -> list[int]:
        return [i for i, c in enumerate(self.contents) if c.get("role") == "user" and FEEDBACK_MARK in self.text_of(c)]

    @property
    def turn(self) -> int:
        return len(self._feedbacks())

    @property
    def step(self) -> int:
        start = (self._feedbacks() or [0])[-1]
        return sum(1 for c in self.contents[start:] if c.get("role") == "model")

    def shown(self) -> str:
        return "\n".join(self.text_of(c) for c in self.contents if c.get("role") != "model")


Plan = dict[int, list[Reply]]


@dataclass
class GeminiScript:
    """The scripted Gemini API's responder: the maker's plan, turn by turn."""

    plan: Plan | Callable[[Conversation], Reply]
    maker_requests: list[dict] = field(default_factory=list)
    answered: int = 0  # maker requests answered with a turn (not refused)

    def __call__(self, body: dict) -> Reply | Refusal:
        reply = self._reply(body)
        self.answered += isinstance(reply, Reply) and bool(self.maker_requests and self.maker_requests[-1] is body)
        return reply

    def _reply(self, body: dict) -> Reply | Refusal:
        names = {d.get("name") for t in body.get("tools") or [] for d in t.get("functionDeclarations") or []}
        if "replace" not in names:
            return say("ok")  # Gemini CLI's own side requests
        self.maker_requests.append(body)
        conversation = Conversation(body)
        if callable(self.plan):
            return self.plan(conversation)
        steps = self.plan.get(conversation.turn, [])
        return steps[conversation.step] if conversation.step < len(steps) else say("Done: the goal is met.")


def fair_oracle(api: FakeAPI, hint: str) -> list[dict]:
    """The oracle's side: converged exactly when every condition passed; returns the requests it gets."""
    seen: list[dict] = []

    def respond(body: dict):
        seen.append(body)
        return text(json.dumps(oracle_verdict(body, lambda oracle_input: hint)))

    api.set_responder(respond)
    return seen


class GeminiCLI:
    """`gemini -p` in ``project``, with HOME at ``home``, the extension linked, `goal` on PATH."""

    def __init__(self, binary: str, api: FakeGemini, oracle: FakeAPI, home: Path, project: Path,
                 linked: Path | None = None) -> None:
        """``linked``: a folder kept for the session. The first home is linked by the real `gemini extensions
        link` (it starts Gemini CLI: seconds on a loaded machine) and kept there; later homes are copies of it,
        with its home's path in Gemini CLI's files (the extension's enablement) replaced by theirs."""
        self.binary, self.api, self.oracle, self.home, self.project = binary, api, oracle, home, project
        if linked is not None and (linked / "home").is_file():
            _copy_home(linked, home)
            return
        settings = home / ".gemini" / "settings.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(json.dumps(SETTINGS))
        done = subprocess.run([binary, "extensions", "link", str(EXTENSION), "--consent"], cwd=home, env=self.env(),
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        if linked is not None:
            shutil.copytree(home / ".gemini", linked / ".gemini")
            (linked / "home").write_text(str(home))

    def env(self) -> dict[str, str]:
        return self.api.env(self.home, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
                            GOAL_CONVERGENCE_HOME=str(self.home / ".claude"), GOAL_CONVERGENCE_ORACLE_RETRIES="0",
                            ANTHROPIC_BASE_URL=self.oracle.url, ANTHROPIC_API_KEY="x")

    def run(self, prompt: str, *args: str, timeout: float = 240, model: str = MODEL) -> Result:
        done = subprocess.run([self.binary, "-p", prompt, "--output-format", "json", "--approval-mode", "yolo",
                               "--model", model, *args], cwd=self.project, env=self.env(), capture_output=True, text=True,
                              timeout=timeout)
        # A session that failed prints its JSON (session_id, error) on stderr, after the error's trace.
        at = done.stderr.rfind('{\n  "session_id"')
        try:
            out = json.loads(done.stdout if done.stdout.strip() or at < 0 else done.stderr[at:])
        except ValueError:
            out = {}
        if not isinstance(out, dict) or "session_id" not in out:
            raise AssertionError(f"gemini exited {done.returncode} without a result:\n{done.stdout}\n{done.stderr}")
        return Result(done.returncode, out, done.stderr)


def _copy_home(linked: Path, home: Path) -> None:
    """Gemini CLI's folder of the linked home, as `gemini extensions link` would have left it in ``home``."""
    was = (linked / "home").read_text()
    shutil.copytree(linked / ".gemini", home / ".gemini")
    for path in (home / ".gemini").rglob("*"):
        if path.is_file() and path.suffix in (".json", "") and was in (text := path.read_text(errors="replace")):
            path.write_text(text.replace(was, str(home)))


@dataclass
class Result:
    code: int
    out: dict
    stderr: str

    @property
    def session_id(self) -> str:
        return self.out["session_id"]

    @property
    def tokens(self) -> int:
        """The tokens Gemini CLI's own stats count for the session's main agent."""
        return sum(m.get("roles", {}).get("main", {}).get("tokens", {}).get("total", 0)
                   for m in self.out.get("stats", {}).get("models", {}).values())
