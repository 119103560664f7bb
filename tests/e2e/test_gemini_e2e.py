"""The Gemini CLI extension in the real Gemini CLI (from npm, pinned), linked from this checkout, against the
scripted Gemini API: the maker is Gemini CLI itself, the oracle the `anthropic` provider against fakeapi.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from goal_convergence.models import Goal, TriageItem
from goal_convergence.storage.store import Store
from tests.e2e.gemini_harness import (FEEDBACK_MARK, Conversation, GeminiCLI, GeminiScript, fair_oracle, fix, gemini_binary, read,
                                      shell)
from tests.e2e.harness import two_bug_project
from tests.fakegemini import Refusal, call, fake_gemini, say  # noqa: F401 - a fixture

pytestmark = pytest.mark.e2e

HINT = "ORACLE-HINT-G: mul() in calc.py adds instead of multiplying; return a * b"
NEW_GOAL = "/goal fix both bugs in calc.py --test 'python3 test_calc.py' --oracle anthropic --max-iterations 6"


@pytest.fixture
def project(tmp_path) -> Path:
    return two_bug_project(tmp_path / "calc-project")


@pytest.fixture(scope="module")
def linked(tmp_path_factory) -> Path:
    """Where the module's first home with the extension linked is kept, for the others to copy."""
    return tmp_path_factory.mktemp("gemini-linked")


@pytest.fixture
def gemini(fake_gemini, fake_api, isolated_home, project, linked) -> GeminiCLI:  # noqa: F811
    return GeminiCLI(gemini_binary(), fake_gemini, fake_api, isolated_home, project, linked)


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


def test_a_maker_that_only_claims_success_never_converges(gemini):
    script = scripted(gemini, lambda conversation: say("All tests pass now. Done."))
    fair_oracle(gemini.oracle, HINT)
    result = gemini.run(NEW_GOAL)
    goal = the_goal()
    assert (goal.state, goal.stop_reason, goal.spent.iterations) == ("escalated", "stuck", 3)
    assert all(it.decision.action != "converge" for it in goal.history)
    item = Store().load(TriageItem, goal.escalation.triage_id)
    assert (item.goal_id, item.stop_reason, item.status) == (goal.goal_id, "stuck", "open")
    assert Conversation(script.maker_requests[-1]).turn == 2  # two denied stops, then it was let stop
    assert f"{goal.goal_id} stopped (stuck)" in result.stderr


def test_a_maker_that_weakens_the_test_is_refused_and_told_why(gemini, project):
    test = project / "test_calc.py"
    script = scripted(gemini, {0: [fix(test, "sys.exit(1 if failures else 0)", "sys.exit(0)"),
                                   say("The tests pass now. Done.")]})
    oracle = fair_oracle(gemini.oracle, HINT)
    gemini.run(NEW_GOAL)
    goal = the_goal()
    assert goal.state == "escalated" and goal.stop_reason == "stuck"
    assert all(it.decision.action != "converge" and all(c.passed for c in it.conditions) for it in goal.history)
    assert all(i.kind == "pristine-failed" for it in goal.history for i in it.integrity.issues)
    assert oracle == []  # the guard refused before any judge was asked
    told = [Conversation(body).shown() for body in script.maker_requests]
    assert any("with the original test_calc.py" in shown and "changed: test_calc.py" in shown for shown in told)


def test_a_maker_is_denied_its_own_goal_and_converges_only_on_the_real_fix(gemini, project, gc_home):
    calc = project / "calc.py"

    def plan(conversation: Conversation):
        goal = the_goal()
        goal_file = gc_home / "goals" / f"{goal.goal_id}.json"
        steps = {0: [shell(f"goal run {goal.goal_id} --oracle conditions"), read(goal_file),
                     call("write_file", {"file_path": str(goal_file), "content": "{}"}),
                     fix(calc, "return a - b", "return a + b"), say("Fixed add().")],
                 1: fix_mul(calc)}.get(conversation.turn, [])
        return steps[conversation.step] if conversation.step < len(steps) else say("Done.")

    script = scripted(gemini, plan)
    fair_oracle(gemini.oracle, HINT)
    # the home in the workspace: Gemini CLI's own check would refuse paths outside it before the hook could
    gemini.run(NEW_GOAL, "--include-directories", str(gc_home.parent))
    goal = the_goal()
    assert (goal.state, goal.stop_reason, goal.oracle.provider) == ("converged", "converged", "anthropic")
    assert [it.decision.action for it in goal.history] == ["continue", "converge"]
    results = [json.dumps(part["functionResponse"]) for body in script.maker_requests[-1:]
               for c in body["contents"] for part in c.get("parts", []) if "functionResponse" in part]
    denied = [r for r in results if "goal-convergence refused this call" in r]
    goal_file = gc_home / "goals" / f"{goal.goal_id}.json"
    assert len(denied) == 3, results
    assert any("runs the goal-convergence CLI (`goal run`)" in r for r in denied)
    assert any(f"reads `{goal_file}`" in r for r in denied) and any(f"writes `{goal_file}`" in r for r in denied)
    assert all("/goal" in r and "/goal-convergence:goal" not in r for r in denied)


def test_a_goal_outlives_its_session_resumes_in_another_and_its_spend_is_charged_once(gemini, project):
    """The first session dies of an API error in its second turn: Gemini CLI exits without its SessionEnd
    hook, the goal still active. A new session takes it over with `/goal resume` and finishes it."""
    calc = project / "calc.py"
    first_script = scripted(gemini, {0: fix_add(calc), 1: [Refusal()]})
    fair_oracle(gemini.oracle, HINT)
    first = gemini.run(NEW_GOAL)
    assert first.code != 0 and "refused by the script" in first.out["error"]["message"]
    left = the_goal()
    assert (left.state, left.session_id, left.agent, left.spent.iterations) == ("active", first.session_id,
                                                                                  "gemini-cli", 1)

    second_script = scripted(gemini, {0: [read(calc), *fix_mul(calc)]})
    second = gemini.run("/goal resume")
    done = the_goal()
    assert (done.state, done.session_id, done.spent.iterations) == ("converged", second.session_id, 2)
    assert f"{left.goal_id} (active in another session)" in Conversation(second_script.maker_requests[0]).shown()
    # every token of both sessions' answered maker requests charged exactly once (each answer is 1100 tokens),
    # the first session's last message too, which its one read held back and no SessionEnd charged
    assert done.spent.maker_tokens == 1100 * (first_script.answered + second_script.answered)
    assert second.tokens == 1100 * second_script.answered


def test_a_status_command_in_the_goals_own_session_is_not_an_iteration(gemini, project):
    calc = project / "calc.py"
    scripted(gemini, {0: fix_add(calc), 1: [Refusal()]})
    fair_oracle(gemini.oracle, HINT)
    first = gemini.run(NEW_GOAL)
    before = the_goal()
    assert (before.state, before.spent.iterations) == ("active", 1)

    script = scripted(gemini, lambda conversation: say("Here is the goal's status."))
    gemini.run("/goal status", "--resume", first.session_id)
    after = the_goal()
    assert (after.state, after.session_id, after.spent.iterations) == ("active", first.session_id, 1)
    assert after.active_since is None  # this session ended normally: its SessionEnd hook stopped the goal's clock
    shown = Conversation(script.maker_requests[-1]).shown()
    assert f"{before.goal_id}" in shown and "Show this status to the user" in shown
    assert FEEDBACK_MARK not in shown.split("Show this status to the user")[-1]  # no stop was denied after it

    # a turn that began with a control command but then worked (a tool call) is an iteration after all: the
    # control mark looks for Gemini's tool calls in its chat recording (claude_code/control.py)
    scripted(gemini, lambda c: say("Looked at it.") if "functionResponse" in json.dumps(c.contents[-1]) else read(calc))
    gemini.run("/goal status", "--resume", first.session_id)
    assert the_goal().spent.iterations > 1  # checked (and, the goal not met, carried on until it was stuck)


def test_a_maker_model_with_no_price_is_charged_in_tokens_and_held_to_a_token_budget(gemini, project):
    calc = project / "calc.py"
    scripted(gemini, {0: fix_add(calc), 1: fix_mul(calc)})
    fair_oracle(gemini.oracle, HINT)
    result = gemini.run(NEW_GOAL, model="gemini-9-ultra")
    goal = the_goal()
    assert goal.state == "converged" and goal.maker.model == "gemini-9-ultra"
    assert goal.spent.maker_dollars == 0 and goal.spent.maker_tokens == 5 * 1100  # never a silent $0: tokens...
    assert goal.budget.max_tokens is not None and goal.budget.max_tokens < 10.0 / 75 * 1e6 + goal.spent.tokens
    assert "no price for gemini-9-ultra" in result.stderr and "token budget" in result.stderr  # ...and said so
