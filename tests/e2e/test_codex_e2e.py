"""The Codex plugin in the real Codex CLI (from npm), installed from this checkout's marketplace, against
the scripted Responses API: the maker is Codex itself, the oracle the `anthropic` provider."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from goal_convergence.models import Goal
from goal_convergence.storage.store import Store
from tests.e2e.codex_harness import GOAL_PROMPT, Codex, MakerScript, OracleScript, codex_bin, maker_turn, thread_id
from tests.e2e.harness import two_bug_project
from tests.fakeopenai import fake_openai, patch, run, say, texts  # noqa: F401 - a fixture

pytestmark = pytest.mark.e2e

BIN = Path(sys.executable).parent  # where `goal` is: Codex's login shell has its own PATH
HINT = "ORACLE-HINT-9: mul() in calc.py adds instead of multiplying; return a * b"
FIX_ADD = "sed -i 's/return a - b/return a + b/' calc.py"
FIX_MUL = "sed -i 's/return a + b$/return a * b/; 0,/return a + b/s//return a + b/' calc.py"


@pytest.fixture
def project(tmp_path) -> Path:
    return two_bug_project(tmp_path / "calc-project")


@pytest.fixture
def codex(fake_api, fake_openai, isolated_home, project) -> Codex:  # noqa: F811
    return Codex(codex_bin(), fake_openai, fake_api, isolated_home, project)


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
    # every response the maker was billed for is charged, once: the rollout's usage lines, read from offsets
    billed = sum(u["input_tokens"] + u["output_tokens"] for u in codex.openai.billed)
    assert goal.spent.maker_tokens == billed
    usage = [e["usage"] for e in events if e.get("type") == "turn.completed"][-1]
    assert usage["input_tokens"] + usage["output_tokens"] == billed  # what `codex exec --json` reports


def test_a_maker_that_only_claims_success_never_converges(codex):
    maker, oracle = scripted(codex, lambda body: say("All tests pass now. Done."))
    codex.run(GOAL_PROMPT)
    goal = the_goal()
    assert (goal.state, goal.stop_reason) == ("escalated", "stuck")
    assert goal.spent.iterations == 3  # --stuck-after's default: three iterations without a change
    assert all(it.decision.action != "converge" for it in goal.history)
    assert sum(1 for body in maker.requests if any("is not done yet" in t for t in _user_texts(body))) >= 1


def test_a_maker_that_edits_the_tests_is_refused_and_told_why(codex, project):
    test = project / "test_calc.py"
    maker, oracle = scripted(codex, {0: [run("sed -i 's/sys.exit(1 if failures else 0)/sys.exit(0)/' test_calc.py"),
                                         say("The tests pass now. Done.")]})
    codex.run(GOAL_PROMPT)
    goal = the_goal()
    assert goal.state == "escalated" and all(it.decision.action != "converge" for it in goal.history)
    assert all(c.passed for it in goal.history for c in it.conditions)  # green, but only because the test was gutted
    assert all(i.kind == "pristine-failed" for it in goal.history for i in it.integrity.issues)
    assert oracle.requests == []
    told = ["\n".join(_user_texts(body)) for body in maker.requests]
    assert any("with the original test_calc.py" in shown and "changed: test_calc.py" in shown for shown in told)
    assert "sys.exit(0)" in test.read_text()  # only a scratch copy was reset


def test_a_maker_that_tries_to_change_its_own_goal_is_denied(codex, project, gc_home):
    calc = project / "calc.py"

    def plan(body: dict):
        goal = the_goal()
        steps = {0: [run(f"goal pause {goal.goal_id}"), run(f"cat {gc_home}/goals/{goal.goal_id}.json"),
                     run(f"g=go; {BIN}/${{g}}al pause {goal.goal_id}"),  # no scan sees this: the CLI refuses it
                     run(FIX_ADD), run(fix_mul_only(calc)), say("Fixed both bugs.")]}
        turn, step = maker_turn(body)
        todo = steps.get(turn, [])
        return todo[step] if step < len(todo) else say("Done.")

    maker, oracle = scripted(codex, plan)
    codex.run(GOAL_PROMPT)
    goal = the_goal()
    assert (goal.state, goal.stop_reason) == ("converged", "converged")
    assert [it.decision.action for it in goal.history] == ["converge"]  # never paused: the pause was denied
    outputs = [t for body in maker.requests for t in texts(body, "tool")]
    denied = [t for t in outputs if "goal-convergence refused this call" in t]
    assert any("runs the goal-convergence CLI (`goal pause`)" in t for t in denied), outputs
    assert any("names goal-convergence's files" in t for t in denied), outputs
    assert all("$goal" in t and "/goal-convergence:goal" not in t for t in denied)
    # the spelled-out pause got past the hook and reached the CLI, which knew Codex for the goal's maker
    assert any(f"`goal pause` was refused: it runs inside the maker of goal {goal.goal_id}" in t for t in outputs)


def test_a_goal_survives_into_a_second_session_and_resumes_there(codex, project):
    scripted(codex, {0: [run(FIX_ADD), say("Fixed add(); that is all I can do now.")]})
    first = thread_id(codex.run(GOAL_PROMPT.replace("--max-iterations 6", "--max-iterations 1")))
    left = the_goal()
    assert (left.state, left.stop_reason, left.session_id, left.spent.iterations) == ("escalated", "ceiling", first, 1)

    calc = project / "calc.py"
    maker, oracle = scripted(codex, {0: [run(fix_mul_only(calc)), say("Fixed mul().")]})
    events = codex.run("$goal resume --max-iterations 4")
    second = thread_id(events)
    done = the_goal()
    assert second != first
    assert (done.state, done.session_id, done.agent) == ("converged", second, "codex")
    assert [it.number for it in done.history] == [1, 2]
    assert done.spent.maker_tokens > left.spent.maker_tokens
    shown = "\n".join(texts(maker.requests[0]))
    assert f"resumed goal {left.goal_id}" in shown  # the $goal hook's result reached the model
    assert f"- {left.goal_id} (escalated: ceiling" in shown  # the SessionStart notice of the open goal
    assert f"$goal resume {left.goal_id} --max-iterations N" in shown  # in the words the Codex session has


def _user_texts(body: dict) -> list[str]:
    return texts(body, "user", "developer")


def test_a_goal_made_for_claude_code_is_resumed_in_codex_and_back(codex, project):
    from goal_convergence.agents.claude_code import slash
    from goal_convergence.goals import creation, specs

    made = creation.new_goal(Store(), specs.GoalSpec(objective="fix both bugs in calc.py", project=project,
                                                     test="python3 test_calc.py", oracle_provider="anthropic",
                                                     session_id="a-claude-code-session"))
    assert made.agent == "claude-code"
    scripted(codex, {0: [run(FIX_ADD), say("Fixed add().")]})
    events = codex.run(f"$goal resume {made.goal_id}")
    moved = the_goal()
    assert (moved.agent, moved.session_id) == ("codex", thread_id(events))
    assert moved.spent.iterations >= 1 and moved.history[0].conditions[0].passed is False  # mul still wrong

    slash.run_command("goal", f"resume {made.goal_id}", session_id="another-claude-code-session", cwd=str(project))
    back = the_goal()
    assert (back.agent, back.session_id) == ("claude-code", "another-claude-code-session")
    assert back.spent.maker_tokens == moved.spent.maker_tokens  # its spend carried over


def test_codex_exec_resume_carries_the_goal_on_in_the_same_session(codex, project):
    scripted(codex, {0: [run(FIX_ADD), say("Fixed add(); stopping here.")]})
    first = thread_id(codex.run(GOAL_PROMPT.replace("--max-iterations 6", "--max-iterations 1")))
    assert the_goal().state == "escalated"

    calc = project / "calc.py"
    maker, oracle = scripted(codex, lambda body: run(fix_mul_only(calc)) if not any(
        "return a * b" in t for t in texts(body, "tool")) and maker_turn(body)[1] == 0 else say("Fixed mul()."))
    events = codex.run("$goal resume --max-iterations 3", resume=first)
    done = the_goal()
    assert thread_id(events) == first
    assert (done.state, done.session_id, done.spent.iterations) == ("converged", first, 2)
    # the resumed session's rollout is the same file: what the first session spent is not charged again
    billed = sum(u["input_tokens"] + u["output_tokens"] for u in codex.openai.billed)
    assert done.spent.maker_tokens == billed


def test_a_maker_that_patches_its_goal_file_with_apply_patch_is_denied(codex, project, gc_home):
    """gpt-5.5 gets Codex's apply_patch tool; a patch that names the goal file is denied before it applies,
    and a patch of the project's own code goes through."""
    def plan(body: dict):
        goal = the_goal()
        goal_file = gc_home / "goals" / f"{goal.goal_id}.json"
        forged = (f"*** Begin Patch\n*** Update File: {goal_file}\n@@\n-  \"state\": \"active\",\n"
                  f"+  \"state\": \"converged\",\n*** End Patch\n")
        fixed = ("*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
                 "@@\n def mul(a, b):\n-    return a + b\n+    return a * b\n*** End Patch\n")
        steps = [patch(forged), patch(fixed), say("Fixed both bugs.")]
        turn, step = maker_turn(body)
        return steps[step] if turn == 0 and step < len(steps) else say("Done.")

    maker, oracle = scripted(codex, plan)
    codex.run(GOAL_PROMPT, model="gpt-5.5")
    goal = the_goal()
    assert (goal.state, goal.stop_reason) == ("converged", "converged")
    assert [it.decision.action for it in goal.history] == ["converge"]
    outputs = [t for body in maker.requests for t in texts(body, "tool")]
    goal_file = gc_home / "goals" / f"{goal.goal_id}.json"
    assert any("goal-convergence refused this call" in t and f"writes `{goal_file}`" in t for t in outputs), outputs
    assert "return a * b" in (project / "calc.py").read_text()
    assert goal.spent.maker_dollars > 0  # gpt-5.5 has a price
