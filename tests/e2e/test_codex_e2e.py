"""The Codex plugin in the real Codex CLI (from npm), installed from this checkout's marketplace, against
the scripted Responses API: the maker is Codex itself, the oracle the `anthropic` provider."""

from __future__ import annotations

from pathlib import Path

import pytest

from goal_convergence.models import Goal
from goal_convergence.storage.store import Store
from tests.e2e.codex_harness import GOAL_PROMPT, Codex, MakerScript, OracleScript, codex_bin
from tests.e2e.harness import two_bug_project
from tests.fakeopenai import FakeOpenAI, run, say

pytestmark = pytest.mark.e2e

HINT = "ORACLE-HINT-9: mul() in calc.py adds instead of multiplying; return a * b"
FIX_ADD = "sed -i 's/return a - b/return a + b/' calc.py"
FIX_MUL = "sed -i 's/return a + b$/return a * b/; 0,/return a + b/s//return a + b/' calc.py"


@pytest.fixture
def openai():
    api = FakeOpenAI()
    yield api
    api.close()


@pytest.fixture
def project(tmp_path) -> Path:
    return two_bug_project(tmp_path / "calc-project")


@pytest.fixture
def codex(fake_api, openai, isolated_home, project) -> Codex:
    return Codex(codex_bin(), openai, fake_api, isolated_home, project)


def scripted(codex: Codex, plan, hint: str = HINT) -> tuple[MakerScript, OracleScript]:
    maker, oracle = MakerScript(plan), OracleScript(hint)
    codex.openai.set_responder(maker)
    codex.anthropic.set_responder(oracle)
    return maker, oracle


def the_goal() -> Goal:
    [goal] = Store().iter_all(Goal)
    return goal


def fix_mul_only(calc: Path) -> str:
    return f"python3 - <<'EOF'\nimport pathlib\np = pathlib.Path({str(calc)!r})\nt = p.read_text()\n" \
           f"p.write_text(t.replace('def mul(a, b):\\n    return a + b', 'def mul(a, b):\\n    return a * b'))\nEOF"


def test_a_codex_session_converges_after_two_turns_with_the_oracles_hint_fed_back(codex, project):
    calc = project / "calc.py"
    maker, oracle = scripted(codex, {0: [run(FIX_ADD), say("Fixed add(); I believe it is done.")],
                                     1: [run(fix_mul_only(calc)), say("Fixed mul().")]})
    events = codex.run(GOAL_PROMPT)
    goal = the_goal()
    assert (goal.state, goal.stop_reason, goal.spent.iterations) == ("converged", "converged", 2), codex.last_stderr
    assert goal.agent == "codex" and goal.session_id
    assert "return a * b" in calc.read_text() and "return a + b" in calc.read_text()
    assert len(oracle.requests) == 2
    fed = [body for body in maker.requests if any(HINT in t for t in _user_texts(body))]
    assert fed, "the oracle's hint came back to the maker as the Stop hook's block reason"
    assert goal.spent.maker_dollars > 0 and goal.spent.maker_tokens > 0 and goal.spent.oracle_dollars > 0
    assert [it.decision.action for it in goal.history] == ["continue", "converge"]
    assert any(e.get("type") == "turn.completed" for e in events)


def _user_texts(body: dict) -> list[str]:
    from tests.fakeopenai import texts

    return texts(body, "user", "developer")
