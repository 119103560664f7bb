"""`goal run --maker gemini`: the real Gemini CLI (from npm, pinned) as the headless maker of a goal on the demo's
sample project, against the scripted Gemini API; the oracle is the `anthropic` provider against fakeapi.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from goal_convergence.loop import demo
from goal_convergence.models import Goal
from goal_convergence.storage.store import Store
from tests.conftest import git
from tests.e2e.gemini_harness import ORACLE_MARK, SETTINGS, Conversation, fair_oracle, fix, gemini_binary
from tests.fakegemini import MODEL, call, fake_gemini, say  # noqa: F401 - a fixture

pytestmark = pytest.mark.e2e

HINT = "ORACLE-HINT-S: sentence_count() must count ! and ? as sentence ends too"
NOT_MET = "The goal is not met yet"  # how the headless maker's hint prompt begins (makers.hint_prompt)


@pytest.fixture
def sample(tmp_path) -> Path:
    project = tmp_path / "sample"
    shutil.copytree(demo.DATA / "project", project, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "the demo's sample project")
    return project


def test_goal_run_with_the_gemini_maker_converges_on_the_demo_project_and_charges_its_spend(
        fake_gemini, fake_api, isolated_home, gc_home, sample):  # noqa: F811
    binary = gemini_binary()
    (isolated_home / ".gemini").mkdir()
    (isolated_home / ".gemini" / "settings.json").write_text(json.dumps(SETTINGS))
    stats = sample / "textstats.py"
    plan = {0: [fix(stats, 'return text.split(" ")', "return text.split()"), say("Fixed word_count.")],
            1: [fix(stats, 'return text.count(".")', 'return sum(text.count(mark) for mark in ".!?")'),
                say("Fixed sentence_count.")]}
    requests: list[dict] = []

    def respond(body: dict):
        if not body.get("tools"):
            return say("ok")
        requests.append(body)
        conversation = Conversation(body)
        turn = sum(1 for c in conversation.contents if c.get("role") == "user" and NOT_MET in conversation.text_of(c))
        start = max([i for i, c in enumerate(conversation.contents)
                     if c.get("role") == "user" and NOT_MET in conversation.text_of(c)] or [0])
        step = sum(1 for c in conversation.contents[start:] if c.get("role") == "model")
        steps = plan.get(turn, [])
        return steps[step] if step < len(steps) else say("Done.")

    fake_gemini.responder = respond
    oracle = fair_oracle(fake_api, HINT)
    env = fake_gemini.env(isolated_home, GEMINI_BIN=binary, GOAL_CONVERGENCE_HOME=str(gc_home),
                          ANTHROPIC_BASE_URL=fake_api.url, ANTHROPIC_API_KEY="x", GOAL_CONVERGENCE_ORACLE_RETRIES="0")
    done = subprocess.run([sys.executable, "-m", "goal_convergence", "run", "make all tests pass",
                           "--test", demo.test_command("unittest"), "--maker", "gemini", "--maker-model", MODEL,
                           "--oracle", "anthropic", "--max-iterations", "5", "--json"],
                          cwd=sample, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    [goal] = Store(gc_home).iter_all(Goal)
    assert (goal.state, goal.stop_reason, goal.spent.iterations) == ("converged", "converged", 2)
    assert goal.maker.model == MODEL and goal.maker.session_id  # the second turn resumed the first's session
    assert len(oracle) == 2
    hinted = [Conversation(body).shown() for body in requests if HINT in Conversation(body).shown()]
    assert hinted and all("Your goal: make all tests pass" in shown for shown in hinted)  # in the resumed session
    assert goal.spent.maker_tokens == 1100 * len(requests)  # each scripted answer is 1100 tokens, charged once
    assert goal.spent.maker_dollars == pytest.approx(len(requests) * (1000 * 0.30 + 100 * 2.50) / 1e6)


FIXER = """import pathlib
p = pathlib.Path("calc.py")
s = p.read_text()
p.write_text(s.replace("a - b", "a + b", 1) if "a - b" in s else s.replace("return a + b\\n", "return a * b\\n", 2)
             .replace("def add(a, b):\\n    return a * b", "def add(a, b):\\n    return a + b"))
"""


def test_the_gemini_cli_oracle_judges_read_only_and_never_the_makers_own_model(
        fake_gemini, isolated_home, gc_home, tmp_path):  # noqa: F811
    from tests.e2e.harness import two_bug_project

    binary = gemini_binary()
    (isolated_home / ".gemini").mkdir()
    (isolated_home / ".gemini" / "settings.json").write_text(json.dumps(SETTINGS))
    project = two_bug_project(tmp_path / "calc")
    (tmp_path / "fix.py").write_text(FIXER)
    judged: list[dict] = []

    def respond(body: dict):
        if ORACLE_MARK not in json.dumps(body.get("systemInstruction", {})):
            return say("ok")
        judged.append(body)
        if len(judged) == 1:  # a judge that tries to change the project: plan mode's policy refuses the write
            return call("write_file", {"file_path": str(project / "calc.py"), "content": "VANDALISED"})
        failing = '\\\\"passed\\\\": false' in json.dumps(body["contents"])
        return say(json.dumps({"converged": not failing, "reasons": ["read calc.py"], "confidence": 0.9,
                               **({"nextHint": "mul() adds; return a * b"} if failing else {})}))

    fake_gemini.responder = respond
    env = fake_gemini.env(isolated_home, GEMINI_BIN=binary, GOAL_CONVERGENCE_HOME=str(gc_home))
    run = [sys.executable, "-m", "goal_convergence", "run", "fix both bugs", "--test", "python3 test_calc.py",
           "--maker-cmd", f"{sys.executable} {tmp_path / 'fix.py'}", "--oracle", "gemini-cli",
           "--oracle-model", "gemini-2.5-pro", "--max-iterations", "4", "--json"]
    done = subprocess.run(run, cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    [goal] = Store(gc_home).iter_all(Goal)
    assert (goal.state, goal.spent.iterations, goal.oracle.provider) == ("converged", 2, "gemini-cli")
    assert len(judged) == 3 and goal.spent.oracle_dollars > 0
    tools = {d["name"] for t in judged[0].get("tools") or [] for d in t.get("functionDeclarations") or []}
    assert "read_file" in tools and "run_shell_command" not in tools  # plan mode: no shell
    refused = json.dumps(judged[1]["contents"][-1])
    assert "VANDALISED" not in (project / "calc.py").read_text() and "write_file" in refused, refused

    # the judge differs from the maker: Gemini judging Gemini's own model is refused before any work
    same = subprocess.run([*run[:4], "fix both bugs", "--test", "python3 test_calc.py", "--maker", "gemini",
                           "--maker-model", "gemini-2.5-pro", "--oracle", "gemini-cli", "--oracle-model",
                           "gemini-2.5-pro"], cwd=project, env=env, capture_output=True, text=True, timeout=120)
    assert same.returncode != 0 and "gemini-2.5-pro" in same.stderr
