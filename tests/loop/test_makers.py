"""Makers: the real Claude Code in print mode as the headless maker, against the scripted API."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fakeapi import delay, text, tool_use
from tests.cli.test_run import GOAL, verdict

MAKER_MODEL = "claude-sonnet-5-5"
HINT = "create fix.py containing OK = True"


def last_user(body: dict) -> dict:
    """The last user turn (with --max-budget-usd Claude Code adds a system note after it)."""
    return next(m for m in reversed(body["messages"]) if m["role"] == "user")


@pytest.mark.e2e
def test_goal_run_with_the_claude_maker_resumes_its_session_with_the_hint(git_repo, fake_api, claude_bin, tmp_path):
    maker_requests: list[dict] = []
    oracle_answers = iter([verdict(False, HINT), verdict(True)])

    def respond(body: dict):
        tools = {t.get("name") for t in body.get("tools") or []}
        if "oracle of goal-convergence" in json.dumps(body.get("system", "")):
            return next(oracle_answers)
        if "Write" not in tools:
            return text("ok")  # Claude Code's side requests
        maker_requests.append(body)
        last = last_user(body)["content"]
        if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in last if isinstance(last, list)):
            return text("Created fix.py.")
        if HINT in json.dumps(last):
            return tool_use("Write", {"file_path": str(git_repo / "fix.py"), "content": "OK = True\n"})
        return text("I believe the goal is already met.")

    fake_api.set_responder(respond)
    run = _run_fix_goal(fake_api, tmp_path, git_repo, claude_bin)
    assert run.returncode == 0, run.stdout + run.stderr
    ledger = json.loads(run.stdout)
    assert (ledger["met"], ledger["turns"]) == (True, 2)
    assert (git_repo / "fix.py").read_text() == "OK = True\n"
    goal = json.loads((tmp_path / "gc" / "goals" / f"{ledger['goalId']}.json").read_text())
    assert goal["maker"]["model"] == MAKER_MODEL and goal["maker"]["sessionId"]
    assert goal["spent"]["makerDollars"] > 0 and goal["spent"]["makerTokens"] > 0
    first, second = maker_requests[0], maker_requests[1]
    assert first["model"] == MAKER_MODEL and "create the fix module" in json.dumps(first["messages"])
    # the second run resumed the first session: the first exchange is still in its messages
    assert "I believe the goal is already met." in json.dumps(second["messages"])
    assert HINT in json.dumps(last_user(second))
    # the maker may spend only what is left of the goal's budget (Claude Code tells the model so)
    assert "USD budget: $0/$9.9" in json.dumps(second["messages"])


@pytest.mark.e2e
def test_claude_makers_racing_resume_each_its_own_session_and_the_loser_is_stopped(git_repo, fake_api, claude_bin,
                                                                                    tmp_path):
    turns: dict[str, list[dict]] = {"1": [], "2": []}

    def respond(body: dict):
        tools = {t.get("name") for t in body.get("tools") or []}
        if "oracle of goal-convergence" in json.dumps(body.get("system", "")):  # met once the fix is made
            return verdict(True) if "Created fix.py" in json.dumps(body) else verdict(False, HINT)
        if "Write" not in tools:
            return text("ok")
        where = re.search(r"Primary working directory: (\S+/attempt-(\d))", json.dumps(body))
        folder, k = where.group(1), where.group(2)  # each attempt's claude -p works in its worktree
        last = last_user(body)["content"]
        if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in last if isinstance(last, list)):
            return text("Created fix.py.")
        turns[k].append(body)
        if HINT not in json.dumps(last):
            return text(f"first reply of attempt {k}")
        if k == "2":
            deadline = time.monotonic() + 60
            while len(turns["1"]) < 2 and time.monotonic() < deadline:  # both first iterations are in: a fixed order
                time.sleep(0.05)
            return tool_use("Write", {"file_path": f"{folder}/fix.py", "content": "OK = True\n"})
        return delay(120, text("attempt 1 never gets here: attempt 2 wins first"))

    fake_api.set_responder(respond)
    # attempt 1's 120 s turn is stopped when attempt 2 wins
    run = _run_fix_goal(fake_api, tmp_path, git_repo, claude_bin, "--attempts", "2", timeout=100)
    assert run.returncode == 0, run.stdout + run.stderr
    ledger = json.loads(run.stdout)
    assert ledger["met"] and "attempt 2 won" in ledger["note"]
    assert (git_repo / "fix.py").read_text() == "OK = True\n"
    assert [e["attempt"] for e in ledger["evidence"]][-1] == 2 and ledger["turns"] == 3
    # each attempt resumed its own session: its second turn carries its own first exchange, not the other's
    second = json.dumps(turns["2"][1]["messages"])
    assert "first reply of attempt 2" in second and "first reply of attempt 1" not in second
    assert "first reply of attempt 1" in json.dumps(turns["1"][1]["messages"])
    goal = json.loads((tmp_path / "gc" / "goals" / f"{ledger['goalId']}.json").read_text())
    assert goal["maker"]["sessionId"] is None  # N sessions: none of them is the goal's


def _run_fix_goal(fake_api, tmp_path, git_repo, claude_bin, *extra: str, timeout: float = 240):
    """`goal run` of "create the fix module" with the real Claude Code as the maker, against the scripted API."""
    env = fake_api.claude_env(tmp_path / "home", CLAUDE_BIN=claude_bin,
                              GOAL_CONVERGENCE_HOME=str(tmp_path / "gc"), GOAL_CONVERGENCE_ORACLE_RETRIES="0",
                              PATH=f"{Path(sys.executable).parent}:/usr/bin:/bin")
    check = f"{sys.executable} -c 'import fix; assert fix.OK'"
    return subprocess.run([*GOAL, "run", "create the fix module", "--check", check, "--maker", "claude",
                           "--maker-model", MAKER_MODEL, *extra, "--json"], cwd=git_repo, env=env,
                          capture_output=True, text=True, timeout=timeout)
