"""The Gemini CLI extension shipped in gemini-extension/: what its files promise matches the code behind them."""

from __future__ import annotations

import json
import re
import subprocess
import tomllib

from goal_convergence.agents.gemini_cli import fast
from goal_convergence.system.geminimode import PIN
from tests.conftest import REPO

EXTENSION = REPO / "gemini-extension"


def test_each_hook_calls_one_event_of_goal_hook_gemini_through_the_extensions_script():
    hooks = json.loads((EXTENSION / "hooks" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {"SessionStart", "BeforeAgent", "BeforeTool", "AfterAgent", "SessionEnd"}
    events = {name: entry[0]["hooks"][0]["command"].split()[-1] for name, entry in hooks.items()}
    assert set(events.values()) == set(fast.EVENTS)
    assert all(h[0]["hooks"][0]["command"].startswith('sh "${extensionPath}') for h in hooks.values())
    assert all(name in fast.TOOLS for name in hooks["BeforeTool"][0]["matcher"].split("|"))
    assert set(fast.TOOLS) <= set(hooks["BeforeTool"][0]["matcher"].split("|"))
    manifest = json.loads((EXTENSION / "gemini-extension.json").read_text())
    assert manifest["name"] == "goal-convergence"


def test_the_command_file_hands_the_raw_arguments_to_the_hook_between_its_marks():
    prompt = tomllib.loads((EXTENSION / "commands" / "goal.toml").read_text())["prompt"]
    assert prompt.startswith(f"{fast.COMMAND_OPEN}{{{{args}}}}{fast.COMMAND_CLOSE}")
    assert "!{" not in prompt  # no shell: the arguments are never parsed by one


def test_without_the_goal_cli_the_hook_script_answers_nothing_and_says_why_at_session_start(tmp_path):
    script = EXTENSION / "hooks" / "goal-hook.sh"
    env = {"PATH": "/usr/bin:/bin"}  # no goal here
    quiet = subprocess.run(["sh", str(script), "before-tool"], input=b"{}", capture_output=True, env=env, check=True)
    assert json.loads(quiet.stdout) == {}
    told = subprocess.run(["sh", str(script), "session-start"], input=b"{}", capture_output=True, env=env, check=True)
    assert "goal CLI is not on PATH" in json.loads(told.stdout)["systemMessage"]


def test_ci_installs_the_gemini_cli_version_the_code_was_checked_against():
    assert re.search(rf"^gemini_version={re.escape(PIN)}$", (REPO / ".ci" / "run").read_text(), re.M)
