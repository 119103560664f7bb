"""Drive the real Claude Code, with this checkout loaded as the plugin, against the scripted API.

One scripted server answers both sides: Claude Code's requests (the maker, a ``Maker`` plan of
tool calls and texts, turn by turn) and the goal's oracle (the `anthropic` provider through the
SDK, told apart by its system prompt). The maker's turn is the number of goal-convergence Stop
hook feedbacks it has been sent; its step is the number of its own messages since the last one.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import REPO, git
from tests.fakeapi import FakeAPI, Message, text, tool_use

MAKER_MODEL = "claude-sonnet-5"
ORACLE_MODEL = "claude-haiku-5-5"
ORACLE_MARK = "You are the oracle of goal-convergence"
FEEDBACK_MARK = "is not done yet"  # the first line of the Stop hook's block reason

CALC_BUGGY = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a + b\n"
CALC_TEST = """import sys
from calc import add, mul

failures = [name for name, ok in (("add", add(2, 3) == 5), ("mul", mul(2, 3) == 6)) if not ok]
for name in failures:
    print(f"FAIL: test_{name}")
sys.exit(1 if failures else 0)
"""


def two_bug_project(root: Path) -> Path:
    """A git project whose test (python3 test_calc.py) fails on two bugs, one in add, one in mul."""
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "calc.py").write_text(CALC_BUGGY)
    (root / "test_calc.py").write_text(CALC_TEST)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "two bugs")
    return root


def fix(path: Path, old: str, new: str) -> Message:
    return tool_use("Edit", {"file_path": str(path), "old_string": old, "new_string": new})


def read(path: Path) -> Message:
    return tool_use("Read", {"file_path": str(path)})


@dataclass
class Conversation:
    """A maker request, seen the way the scripted maker needs it."""

    body: dict

    @property
    def messages(self) -> list[dict]:
        return self.body.get("messages", [])

    @staticmethod
    def text_of(message: dict) -> str:
        content = message.get("content")
        if isinstance(content, str):
            return content
        parts = []
        for block in content or []:
            inner = block.get("content") if block.get("type") == "tool_result" else None
            parts.append(block.get("text") or (inner if isinstance(inner, str) else json.dumps(inner or "")))
        return "\n".join(parts)

    def _feedback_positions(self) -> list[int]:
        return [i for i, m in enumerate(self.messages) if m["role"] == "user" and FEEDBACK_MARK in self.text_of(m)]

    @property
    def turn(self) -> int:
        return len(self._feedback_positions())

    @property
    def step(self) -> int:
        start = (self._feedback_positions() or [0])[-1]
        return sum(1 for m in self.messages[start:] if m["role"] == "assistant")

    def shown(self) -> str:
        """All the maker was shown: user messages, tool results, system reminders (not its own words)."""
        return "\n".join(self.text_of(m) for m in self.messages if m["role"] != "assistant")


# A maker plan: turn -> the messages of that turn, in order; a turn ends with its last (text) message.
Plan = dict[int, list[Message]]


def oracle_verdict(body: dict, hint: Callable[[dict], str]) -> dict:
    """The verdict a fair oracle gives: converged exactly when every condition passed."""
    found = re.search(r"```json\n(.*)\n```", Conversation.text_of(body["messages"][0]), re.S)
    oracle_input = json.loads(found.group(1)) if found else {"conditions": []}
    failing = [c for c in oracle_input["conditions"] if not c["passed"]]
    if not failing:
        return {"converged": True, "reasons": ["every condition passes and the objective is met"], "confidence": 0.9}
    return {"converged": False, "reasons": [f"condition {c['index']} fails" for c in failing],
            "nextHint": hint(oracle_input), "confidence": 0.8}


@dataclass
class Script:
    """The responder of the scripted API for one test: the maker's plan and the oracle's hints."""

    plan: Plan | Callable[[Conversation], Message]
    hint: Callable[[dict], str] = lambda oracle_input: "look at the failing test"
    maker_requests: list[dict] = field(default_factory=list)
    oracle_requests: list[dict] = field(default_factory=list)

    def __call__(self, body: dict) -> Message:
        system = body.get("system")
        system_text = system if isinstance(system, str) else " ".join(b.get("text", "") for b in system or [])
        if ORACLE_MARK in system_text:
            self.oracle_requests.append(body)
            return text(json.dumps(oracle_verdict(body, self.hint)))
        if not any(t.get("name") == "Edit" for t in body.get("tools", [])):
            return text("ok")  # Claude Code's side requests (titles and such)
        self.maker_requests.append(body)
        conversation = Conversation(body)
        if callable(self.plan):
            return self.plan(conversation)
        steps = self.plan.get(conversation.turn, [])
        return steps[conversation.step] if conversation.step < len(steps) else text("Done: the goal is met.")


class ClaudeCode:
    """`claude -p` in ``project``, with HOME at ``home``, the plugin from this checkout, `goal` on PATH."""

    def __init__(self, binary: str, api: FakeAPI, home: Path, project: Path) -> None:
        self.binary, self.api, self.home, self.project = binary, api, home, project

    def env(self) -> dict[str, str]:
        return self.api.claude_env(self.home, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
                                   GOAL_CONVERGENCE_HOME=str(self.home / ".claude"),
                                   GOAL_CONVERGENCE_ORACLE_RETRIES="0")

    def run(self, prompt: str, *args: str, timeout: float = 180) -> list[dict]:
        """One headless session; returns its events (stream-json, hook events included), the last
        being Claude Code's result (with ``session_id``, ``subtype``, ``num_turns``...)."""
        done = subprocess.run([self.binary, "-p", prompt, "--plugin-dir", str(REPO), "--model", MAKER_MODEL,
                               "--permission-mode", "acceptEdits", "--output-format", "stream-json", "--verbose",
                               "--include-hook-events", *args],
                              cwd=self.project, env=self.env(), capture_output=True, text=True, timeout=timeout)
        try:
            events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
        except ValueError:
            events = []
        if not events or events[-1].get("type") != "result":
            raise AssertionError(f"claude exited {done.returncode} without a result:\n{done.stdout}\n{done.stderr}")
        return events


def notices(events: list[dict]) -> list[str]:
    """What the session showed the user from hooks (their systemMessage lines)."""
    return [e["content"] for e in events if e.get("type") == "system" and e.get("subtype") == "informational"]


def hook_outputs(events: list[dict], event: str) -> list[dict]:
    """The JSON answers a hook event printed, in order."""
    return [json.loads(e["stdout"]) for e in events
            if e.get("subtype") == "hook_response" and e.get("hook_event") == event and e.get("stdout", "").strip()]
