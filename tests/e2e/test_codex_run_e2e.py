"""`goal run --maker codex` on the demo's sample project, with the real Codex CLI as the maker (`codex exec`,
then `codex exec resume` with each hint) and as the read-only judge (the codex-cli oracle), both against
the scripted Responses API, told apart by the oracle's system prompt."""

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
from tests.e2e.codex_harness import MAKER_MODEL, codex_bin
from tests.e2e.harness import ORACLE_MARK
from tests.fakeopenai import Reply, fake_openai, run, say, texts  # noqa: F401 - a fixture

pytestmark = pytest.mark.e2e

JUDGE_MODEL = "gpt-5-mini"
HINT = "ORACLE-HINT-3: sentence_count() only counts '.'; a sentence also ends with ! or ?"
FIX_WORDS = "sed -i 's/return text.split(\" \")/return text.split()/' textstats.py"
FIX_SENTENCES = "sed -i 's/return text.count(\".\")/return sum(text.count(m) for m in \".!?\")/' textstats.py"


@pytest.fixture
def sample(tmp_path) -> Path:
    project = tmp_path / "sample"
    shutil.copytree(demo.DATA / "project", project, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "the demo's sample project")
    return project


class Both:
    """The maker's plan by the number of hints it got, and a fair judge with a hint."""

    def __init__(self) -> None:
        self.maker: list[dict] = []
        self.judge: list[dict] = []

    def __call__(self, body: dict) -> Reply:
        shown = "\n".join(texts(body, "user", "developer"))
        if ORACLE_MARK in shown:
            self.judge.append(body)
            oracle_input = json.loads(shown.split("```json\n", 1)[1].split("\n```", 1)[0])
            failing = [c for c in oracle_input["conditions"] if not c["passed"]]
            verdict = {"converged": not failing, "reasons": ["checked the conditions"], "confidence": 0.9,
                       **({"nextHint": HINT} if failing else {})}
            return say(json.dumps(verdict))
        self.maker.append(body)
        hints = sum(1 for t in texts(body, "user") if "The goal is not met yet" in t)
        calls = sum(1 for item in body["input"] if item.get("type") == "function_call")
        plan = [[run(FIX_WORDS), say("Fixed words().")], [run(FIX_SENTENCES), say("Fixed sentence_count().")]]
        steps = plan[hints] if hints < len(plan) else []
        done = calls - sum(len(p) - 1 for p in plan[:hints])
        return steps[done] if 0 <= done < len(steps) else say("Nothing left to change.")


def test_goal_run_with_the_codex_maker_and_the_codex_judge_converges_on_the_demo_project(
        fake_openai, sample, isolated_home, monkeypatch):  # noqa: F811
    binary = codex_bin()
    codex_home = isolated_home / ".codex"
    fake_openai.codex_config(codex_home, MAKER_MODEL)
    both = Both()
    fake_openai.set_responder(both)
    env = {**dict(__import__("os").environ), "CODEX_BIN": binary, "CODEX_HOME": str(codex_home)}
    done = subprocess.run([sys.executable, "-m", "goal_convergence", "run", "make all tests pass", "--maker", "codex",
                           "--test", f"{sys.executable} -m unittest -q", "--oracle", "codex-cli",
                           "--oracle-model", JUDGE_MODEL, "--max-iterations", "4", "--json"],
                          cwd=sample, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    [goal] = Store().iter_all(Goal)
    assert (goal.state, goal.stop_reason, goal.oracle.provider, goal.oracle.model) == (
        "converged", "converged", "codex-cli", JUDGE_MODEL)
    assert [it.decision.action for it in goal.history] == ["continue", "converge"]
    assert goal.history[0].decision.hint.startswith("ORACLE-HINT-3")
    assert len(both.judge) == 2 and all(body["model"] == JUDGE_MODEL for body in both.judge)
    assert any(HINT in "\n".join(texts(body, "user")) for body in both.maker)  # the hint reached the maker
    # both makers' turns and both judge calls are charged, the maker's from its rollout file
    maker_billed = sum(u["input_tokens"] + u["output_tokens"]
                       for body, u in zip(fake_openai.requests, fake_openai.billed) if body["model"] == MAKER_MODEL)
    assert goal.spent.maker_tokens == maker_billed and goal.spent.maker_dollars > 0
    assert goal.spent.oracle_tokens > 0 and goal.spent.oracle_dollars > 0
    assert "return text.split()" in (sample / "textstats.py").read_text()


def test_the_codex_judge_is_refused_when_it_would_run_the_makers_model(sample, isolated_home):
    done = subprocess.run([sys.executable, "-m", "goal_convergence", "new", "make all tests pass",
                           "--test", f"{sys.executable} -m unittest -q", "--oracle", "codex-cli",
                           "--oracle-model", MAKER_MODEL, "--maker-model", MAKER_MODEL],
                          cwd=sample, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert f"the oracle model ({MAKER_MODEL}) is the maker's model" in done.stderr
    assert "gpt-5.1-codex-mini or gpt-5-mini" in done.stderr


def test_a_codex_maker_on_a_model_with_no_price_needs_a_token_budget(fake_openai, sample, isolated_home):  # noqa: F811
    codex_home = isolated_home / ".codex"
    fake_openai.codex_config(codex_home, "gpt-9-nano")
    env = {**dict(__import__("os").environ), "CODEX_BIN": codex_bin(), "CODEX_HOME": str(codex_home)}
    args = [sys.executable, "-m", "goal_convergence", "run", "make all tests pass", "--maker", "codex",
            "--test", f"{sys.executable} -m unittest -q", "--oracle", "conditions", "--max-iterations", "1"]
    refused = subprocess.run(args, cwd=sample, env=env, capture_output=True, text=True, timeout=300)
    assert refused.returncode != 0 and fake_openai.requests == []  # refused before the maker spent anything
    assert "no price for the Codex model 'gpt-9-nano'" in refused.stderr + refused.stdout
    assert "--max-tokens N" in refused.stderr + refused.stdout

    fake_openai.set_responder(lambda body: say("I looked; nothing to change."))
    bounded = subprocess.run([*args, "--max-tokens", "500000"], cwd=sample, env=env, capture_output=True, text=True,
                             timeout=300)
    assert fake_openai.requests, bounded.stderr  # with a token budget it runs, and its tokens are counted
    goal = [g for g in Store().iter_all(Goal) if g.budget.max_tokens == 500000][0]
    assert goal.spent.maker_tokens > 0 and goal.spent.maker_dollars == 0
