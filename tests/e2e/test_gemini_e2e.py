"""The Gemini CLI extension in the real Gemini CLI (from npm, pinned), linked from this checkout, against the
scripted Gemini API: the maker is Gemini CLI itself, the oracle the `anthropic` provider against fakeapi.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from goal_convergence.models import Goal, TriageItem
from goal_convergence.storage.store import Store
from tests.e2e.gemini_harness import (Conversation, GeminiCLI, GeminiScript, fair_oracle, fix, gemini_binary, read,
                                      shell)
from tests.e2e.harness import two_bug_project
from tests.fakegemini import fake_gemini, say  # noqa: F401 - a fixture

pytestmark = pytest.mark.e2e

HINT = "ORACLE-HINT-G: mul() in calc.py adds instead of multiplying; return a * b"
NEW_GOAL = "/goal fix both bugs in calc.py --test 'python3 test_calc.py' --oracle anthropic --max-iterations 6"


@pytest.fixture
def project(tmp_path) -> Path:
    return two_bug_project(tmp_path / "calc-project")


@pytest.fixture
def gemini(fake_gemini, fake_api, isolated_home, project) -> GeminiCLI:  # noqa: F811
    return GeminiCLI(gemini_binary(), fake_gemini, fake_api, isolated_home, project)


def scripted(gemini: GeminiCLI, plan) -> GeminiScript:
    script = GeminiScript(plan)
    gemini.api.responder = script
    return script


def the_goal() -> Goal:
    [goal] = Store().iter_all(Goal)
    return goal


def fix_add(calc: Path) -> list:
    return [read(calc), fix(calc, "return a - b", "return a + b"), say("Fixed add(); I believe it is done.")]


def fix_mul(calc: Path) -> list:
    return [fix(calc, "def mul(a, b):\n    return a + b", "def mul(a, b):\n    return a * b"), say("Fixed mul().")]


def test_two_bugs_converge_in_two_iterations_with_the_oracles_hint_reaching_the_maker(gemini, project):
    calc = project / "calc.py"
    script = scripted(gemini, {0: fix_add(calc), 1: fix_mul(calc)})
    oracle = fair_oracle(gemini.oracle, HINT)
    result = gemini.run(NEW_GOAL)
    goal = the_goal()
    assert (goal.state, goal.stop_reason, goal.spent.iterations, goal.agent) == ("converged", "converged", 2,
                                                                                  "gemini-cli")
    assert goal.session_id == result.session_id
    assert [it.decision.action for it in goal.history] == ["continue", "converge"]
    assert "return a * b" in calc.read_text() and "return a + b" in calc.read_text()
    assert len(oracle) == 2
    hinted = [Conversation(body) for body in script.maker_requests if HINT in Conversation(body).shown()]
    assert hinted and hinted[0].turn == 1  # the hint came back as AfterAgent's deny reason after iteration 1
    assert f"goal-convergence: {goal.goal_id} converged after 2 iterations" in result.stderr
    assert goal.spent.maker_dollars > 0 and goal.spent.oracle_dollars > 0
