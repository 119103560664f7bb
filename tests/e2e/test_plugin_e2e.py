"""The plugin in the real Claude Code (from npm), loaded from this checkout with --plugin-dir, against
the scripted Messages API: the maker is Claude Code itself, the oracle the `anthropic` provider."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from goal_convergence.goals import creation, specs
from goal_convergence.models import Goal, TriageItem
from goal_convergence.storage.store import Store
from tests.e2e.harness import (CALC_BUGGY, ClaudeCode, Conversation, Script, fix, hook_outputs, notices, read,
                               two_bug_project)
from tests.fakeapi import text

pytestmark = pytest.mark.e2e

HINT = "ORACLE-HINT-7: mul() in calc.py adds instead of multiplying; return a * b"
NEW_GOAL = ("/goal-convergence:goal fix both bugs in calc.py --test 'python3 test_calc.py' --oracle anthropic "
            "--max-iterations 6")


@pytest.fixture
def project(tmp_path) -> Path:
    return two_bug_project(tmp_path / "calc-project")


@pytest.fixture
def claude(claude_bin, fake_api, isolated_home, project) -> ClaudeCode:
    return ClaudeCode(claude_bin, fake_api, isolated_home, project)


def scripted(claude: ClaudeCode, plan, hint: str = HINT) -> Script:
    script = Script(plan, hint=lambda oracle_input: hint)
    claude.api.set_responder(script)
    return script


def the_goal() -> Goal:
    [goal] = Store().iter_all(Goal)
    return goal


def fix_add(calc: Path) -> list:
    return [read(calc), fix(calc, "return a - b", "return a + b"), text("Fixed add(); I believe it is done.")]


def fix_mul(calc: Path) -> list:
    return [fix(calc, "def mul(a, b):\n    return a + b", "def mul(a, b):\n    return a * b"), text("Fixed mul().")]


def test_two_bugs_converge_in_two_iterations_with_the_oracles_hint_reaching_the_maker(claude, project, gc_home):
    """Then, in the same session, the report slash command writes the goal's page and prints its path (one
    converging session serves both: each costs a real Claude Code run)."""
    calc = project / "calc.py"
    script = scripted(claude, {0: fix_add(calc), 1: fix_mul(calc), 2: [text("Here is the report.")]})
    events = claude.run(NEW_GOAL)
    result = events[-1]
    assert result["subtype"] == "success", result
    goal = the_goal()
    assert (goal.state, goal.stop_reason, goal.spent.iterations) == ("converged", "converged", 2)
    assert [it.decision.action for it in goal.history] == ["continue", "converge"]
    assert "return a * b" in calc.read_text() and "return a + b" in calc.read_text()
    assert len(script.oracle_requests) == 2
    hinted = [Conversation(body) for body in script.maker_requests if HINT in Conversation(body).shown()]
    assert hinted and hinted[0].turn == 1  # the hint came back as the Stop hook's feedback after iteration 1
    assert hinted[0].shown().count(HINT) == 1  # fed once (a `decision: block` reason is fed twice)
    assert not [e for e in events if e.get("key") == "stop-hook-error"]  # no "Stop hook reported a problem"
    assert any(n.startswith(f"Stop says: goal-convergence: {goal.goal_id} iteration 1 not done (1 failing check)")
               for n in notices(events))
    # the first feedback's spend includes the turn's last message, which the iteration's read held back
    first = hook_outputs(events, "Stop")[0]["hookSpecificOutput"]["additionalContext"]
    shown = float(re.search(r"spend \$([0-9.]+)/", first).group(1))
    assert shown > goal.history[0].maker_cost.dollars + 0.01
    assert goal.spent.maker_dollars > 0 and goal.spent.oracle_dollars > 0
    assert any(n.startswith(f"Stop says: goal-convergence: {goal.goal_id} converged after 2 iterations")
               for n in notices(events))

    events = claude.run("/goal-convergence:goal report", "--resume", result["session_id"])
    told = hook_outputs(events, "UserPromptExpansion")[0]
    path = gc_home / "reports" / f"{goal.goal_id}.html"
    assert f"wrote the report of {goal.goal_id}: {path}" in told["hookSpecificOutput"]["additionalContext"]
    page = path.read_text()
    assert f'data-goal="{goal.goal_id}"' in page and 'data-series="passing" data-values="0,1"' in page
    assert hook_outputs(events, "Stop") == [] and the_goal().spent.iterations == 2  # showing it is no iteration


def test_a_maker_that_only_claims_success_escalates_with_a_triage_item_and_the_session_ends(claude):
    script = scripted(claude, lambda conversation: text("All tests pass now. Done."))
    events = claude.run(NEW_GOAL)
    assert events[-1]["subtype"] == "success"
    goal = the_goal()
    assert (goal.state, goal.stop_reason) == ("escalated", "stuck")
    assert goal.spent.iterations == 3  # --stuck-after's default: three iterations without a change
    item = Store().load(TriageItem, goal.escalation.triage_id)
    assert (item.goal_id, item.stop_reason, item.status) == (goal.goal_id, "stuck", "open")
    assert Conversation(script.maker_requests[-1]).turn == 2  # two blocked stops, then it was let stop
    assert any("stopped (stuck)" in n and item.triage_id in n for n in notices(events))

    shown = hook_outputs(claude.run(f"/goal-convergence:triage show {item.triage_id}"), "UserPromptExpansion")
    assert f"{item.triage_id} (open, from escalation)" in shown[0]["hookSpecificOutput"]["additionalContext"]


def test_a_goal_outlives_its_session_and_resume_in_another_carries_it_to_convergence(claude, project):
    calc = project / "calc.py"
    scripted(claude, {0: fix_add(calc), 1: [text("I have to stop here.")]})
    first = claude.run(NEW_GOAL, "--max-turns", "4")[-1]
    assert first["subtype"] == "error_max_turns"  # the session ended with the goal open
    # SessionEnd detaches the goal in a child of its own session, which may finish after Claude Code exits
    deadline = time.monotonic() + 30
    while the_goal().active_since is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    left = the_goal()
    assert (left.state, left.session_id, left.spent.iterations) == ("active", first["session_id"], 2)
    assert left.active_since is None  # SessionEnd detached it: its clock is stopped

    script = scripted(claude, {0: [read(calc), *fix_mul(calc)]})
    events = claude.run("/goal-convergence:goal resume")
    told = hook_outputs(events, "SessionStart")[0]["hookSpecificOutput"]["additionalContext"]
    assert f"{left.goal_id} (active in another session)" in told and "ORACLE-HINT-7" in told
    assert f"/goal-convergence:goal resume {left.goal_id}" in Conversation(script.maker_requests[0]).shown()
    done = the_goal()
    assert (done.state, done.session_id) == ("converged", events[-1]["session_id"])
    assert [it.number for it in done.history] == [1, 2, 3]
    assert done.spent.maker_dollars > left.spent.maker_dollars


def test_pause_stops_the_loop_at_the_next_stop_and_abandon_ends_it_failed(claude):
    scripted(claude, lambda conversation: text("Still working on it."))
    session = claude.run(NEW_GOAL, "--max-turns", "2")[-1]["session_id"]
    before = the_goal().spent.iterations
    assert before >= 1

    events = claude.run("/goal-convergence:goal pause", "--resume", session)
    assert events[-1]["num_turns"] == 1  # the stop right after the pause was not blocked
    assert hook_outputs(events, "Stop") == []
    paused = the_goal()
    assert (paused.state, paused.spent.iterations) == ("paused", before)

    claude.run("/goal-convergence:goal abandon", "--resume", session)
    assert (the_goal().state, the_goal().stop_reason) == ("failed", "cancelled")


NASTY = """don't break the "API"; echo $(touch PWNED-1) `touch PWNED-2` && touch PWNED-3 | cat
second line with $HOME, ${CLAUDE_SESSION_ID} and a lone quote '"""


def test_an_objective_with_shell_syntax_is_stored_literally_and_runs_nothing(claude, project, isolated_home):
    script = scripted(claude, lambda conversation: text("Noted."))
    claude.run(f"/goal-convergence:goal {NASTY} --check 'python3 test_calc.py' --oracle conditions --max-iterations 1")
    assert the_goal().objective == NASTY
    assert not [p for where in (project, isolated_home, Path.cwd()) for p in where.rglob("PWNED-*")]
    assert NASTY in Conversation(script.maker_requests[0]).shown()
    assert (project / "calc.py").read_text() == CALC_BUGGY


def test_an_unrelated_session_is_never_blocked_and_a_garbage_goal_file_is_quarantined_and_reported(claude, project,
                                                                                                    gc_home):
    """One plain session ("say hello") in a project with another session's goal and a broken goal file beside it:
    the same session serves both (each is a real Claude Code run)."""
    goal = creation.new_goal(Store(), specs.GoalSpec(objective="fix both bugs", project=project,
                                                  test="python3 test_calc.py", session_id="another-session"))
    (gc_home / "goals" / "goal-zzzzzzzz.json").write_text("{ not json at all")
    script = scripted(claude, lambda conversation: text("Hello!"))
    events = claude.run("say hello")
    # the other session's goal does not block this one
    assert (events[-1]["result"], events[-1]["num_turns"]) == ("Hello!", 1)
    assert hook_outputs(events, "Stop") == []
    assert len(script.maker_requests) == 1 and "not done yet" not in Conversation(script.maker_requests[0]).shown()
    assert Store().load(Goal, goal.goal_id).spent.iterations == 0
    assert not (gc_home / "goals" / "goal-zzzzzzzz.json").exists()
    assert list((gc_home / "quarantine").glob("goal-zzzzzzzz.json.*"))
    [reported] = [answer["systemMessage"] for answer in hook_outputs(events, "SessionStart")]
    assert "moved a broken file aside" in reported and "goal-zzzzzzzz.json is not valid JSON" in reported
    assert "`/goal-convergence:goal list` shows it until `/goal-convergence:triage dismiss goal-zzzzzzzz" in reported
    # not told again, but listed until dismissed
    events = claude.run("/goal-convergence:goal list")
    assert not [n for n in notices(events) if "broken file" in n]
    listed = hook_outputs(events, "UserPromptExpansion")[0]["hookSpecificOutput"]["additionalContext"]
    assert "quarantined" in listed and "goal-zzzzzzzz.json." in listed


def test_inside_a_session_messages_name_the_slash_commands(claude):
    scripted(claude, lambda conversation: text("Noted."))
    events = claude.run("/goal-convergence:goal status")
    told = hook_outputs(events, "UserPromptExpansion")[0]
    said = told["hookSpecificOutput"]["additionalContext"] + told["systemMessage"]
    assert "start one with `/goal-convergence:goal OBJECTIVE`" in said and "`goal new" not in said
    events = claude.run("/goal-convergence:triage act")
    usage = hook_outputs(events, "UserPromptExpansion")[0]["hookSpecificOutput"]["additionalContext"]
    assert "Try '/goal-convergence:triage act --help'" in usage and "'goal triage" not in usage


def test_a_maker_that_weakens_the_test_never_converges_even_with_an_oracle_that_would_agree(claude, project):
    """The session edits the test script to always pass. The checks go green and the scripted oracle
    would say converged, but the integrity guard restores test_calc.py in a scratch copy, sees it
    fail, and blocks the stop with a hint that names the cheat; the oracle is never asked."""
    test = project / "test_calc.py"
    script = scripted(claude, {0: [fix(test, "sys.exit(1 if failures else 0)", "sys.exit(0)"),
                                   text("The tests pass now. Done.")]})
    events = claude.run(NEW_GOAL)
    assert events[-1]["subtype"] == "success", events[-1]
    goal = the_goal()
    assert goal.state == "escalated" and goal.stop_reason == "stuck"
    assert all(it.decision.action != "converge" and all(c.passed for c in it.conditions) for it in goal.history)
    assert all(i.kind == "pristine-failed" for it in goal.history for i in it.integrity.issues)
    assert script.oracle_requests == []
    told = [Conversation(body).shown() for body in script.maker_requests]
    assert any("with the original test_calc.py" in shown and "changed: test_calc.py" in shown for shown in told)
    assert "sys.exit(0)" in test.read_text()  # the user's tree is as the maker left it: only a copy was reset


def test_a_control_command_in_the_goals_session_is_not_an_iteration_and_a_working_turn_still_is(claude, project):
    calc = project / "calc.py"

    def plan(conversation: Conversation):
        last = conversation.messages[-1]
        asked = last["role"] == "user" and "carry on" in Conversation.text_of(last)
        return read(calc) if asked else text("Here you are.")

    scripted(claude, plan)
    session = claude.run(NEW_GOAL, "--max-turns", "2")[-1]["session_id"]
    before = the_goal().spent.iterations
    for command in ("/goal-convergence:goal status", "/goal-convergence:goal check", "/goal-convergence:triage list"):
        events = claude.run(command, "--resume", session)
        assert events[-1]["num_turns"] == 1, command  # the stop after it was not blocked
        assert hook_outputs(events, "Stop") == [], command
        assert the_goal().spent.iterations == before, command  # not counted, not checked

    events = claude.run("carry on", "--resume", session, "--max-turns", "3")
    assert the_goal().spent.iterations == before + 1  # a working turn (a Read) is an iteration
    assert the_goal().goal_id in hook_outputs(events, "Stop")[0]["systemMessage"]  # and was answered
