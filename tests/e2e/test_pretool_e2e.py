"""The PreToolUse hook in the real Claude Code: a session that owns an active goal cannot run
goal-convergence on its own goal, nor read or edit the goal file; the goal converges only on the real fix."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from goal_convergence.models import Goal
from goal_convergence.storage.store import Store
from tests.e2e.harness import ClaudeCode, Conversation, Script, fix, read, two_bug_project
from tests.fakeapi import text, tool_use

pytestmark = pytest.mark.e2e

REFUSED = "goal-convergence refused this call"
NEW_GOAL = ("/goal-convergence:goal fix both bugs in calc.py --test 'python3 test_calc.py' --oracle anthropic "
            "--max-iterations 4")


@pytest.fixture
def project(tmp_path) -> Path:
    return two_bug_project(tmp_path / "calc-project")


def the_goal() -> Goal:
    [goal] = Store().iter_all(Goal)
    return goal


def recorded_makers(gc_home: Path) -> dict[int, str]:
    """The processes recorded as makers, by pid, with their goal's id."""
    folder = gc_home / "makers"
    return {int(p.name.split("-")[0]): p.read_text() for p in folder.iterdir()} if folder.is_dir() else {}


def test_the_maker_is_denied_its_own_judge_and_the_goal_converges_only_on_the_real_fix(
        claude_bin, fake_api, isolated_home, gc_home, project):
    calc = project / "calc.py"
    seen_makers: list[tuple[str, str]] = []

    def plan(conversation: Conversation):
        goal = the_goal()
        goal_file = gc_home / "goals" / f"{goal.goal_id}.json"
        forged = gc_home / "goals" / f"{goal.goal_id}.d" / "iteration-2.json"
        steps = {
            0: [tool_use("Bash", {"command": f"cd {project} && goal run {goal.goal_id} --oracle conditions",
                                  "description": "judge my own goal"}),
                read(goal_file),
                fix(goal_file, '"provider": "anthropic"', '"provider": "conditions"'),
                tool_use("Write", {"file_path": str(forged), "content": '{"converged": true}'}),
                text("I changed how the goal is judged. Done.")],
            1: [fix(calc, "return a - b", "return a + b"),
                fix(calc, "def mul(a, b):\n    return a + b", "def mul(a, b):\n    return a * b"),
                text("Fixed both bugs.")],
        }.get(conversation.turn, [])
        if conversation.turn == 0 and conversation.step == 1:  # the hook has run: who is recorded as the maker
            seen_makers.extend((os.path.realpath(f"/proc/{pid}/exe"), gid)
                               for pid, gid in recorded_makers(gc_home).items())
        return steps[conversation.step] if conversation.step < len(steps) else text("Done.")

    script = Script(plan)
    fake_api.set_responder(script)
    events = ClaudeCode(claude_bin, fake_api, isolated_home, project).run(NEW_GOAL, "--allowedTools", "Bash,Read,Edit")
    assert events[-1]["subtype"] == "success", events[-1]

    goal = the_goal()
    assert (goal.state, goal.stop_reason) == ("converged", "converged")
    assert goal.oracle.provider == "anthropic"  # neither `goal run ... --oracle conditions` nor the edit ran
    assert [it.decision.action for it in goal.history] == ["continue", "converge"]
    assert not goal.history[0].conditions[0].passed  # the first stop was judged on the buggy code

    # each denial's reason came back to the model as the tool's result, in the next request
    results = {Conversation.text_of({"content": [block]}) for body in script.maker_requests for m in body["messages"]
               if m["role"] == "user" and isinstance(m["content"], list)
               for block in m["content"] if block.get("type") == "tool_result"}
    denied = {r for r in results if REFUSED in r}
    goal_file = gc_home / "goals" / f"{goal.goal_id}.json"
    assert any("runs the goal-convergence CLI (`goal run`)" in r for r in denied), denied
    assert any(f"reads `{goal_file}`" in r for r in denied), denied
    assert any(f"writes `{goal_file.with_suffix('.d')}/iteration-2.json`" in r for r in denied), denied
    assert all('goal blocked "why"' in r and "A person must change the goal" in r for r in denied)
    assert len(denied) == 3
    # the Edit of the goal file never got as far as the hook: Claude Code edits only a file it has read
    assert any("File has not been read yet" in r for r in results)
    # the fix's edits and the project's reads were let through
    assert "return a * b" in calc.read_text() and "return a + b" in calc.read_text()
    # Claude Code's own process was recorded as the goal's maker, for the CLI's own refusal
    assert (os.path.realpath(claude_bin), goal.goal_id) in seen_makers, seen_makers


def test_a_session_without_a_goal_is_not_touched(claude_bin, fake_api, isolated_home, gc_home, project):
    goal_file = gc_home / "goals" / "notes.txt"
    goal_file.parent.mkdir(parents=True)
    goal_file.write_text("free to read")
    script = Script(lambda conversation: read(goal_file) if conversation.step == 0 else text("Read it."))
    fake_api.set_responder(script)
    events = ClaudeCode(claude_bin, fake_api, isolated_home, project).run("read my notes", "--allowedTools", "Read")
    assert events[-1]["result"] == "Read it."
    assert "free to read" in Conversation(script.maker_requests[-1]).shown()
    assert REFUSED not in Conversation(script.maker_requests[-1]).shown()
    assert not [e for e in events if e.get("hook_event") == "PreToolUse" and e.get("stdout", "").strip()]
    assert not (gc_home / "makers").exists()
