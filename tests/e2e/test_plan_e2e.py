"""The plan in the real Claude Code: the judge adds a task to a green run, the Stop hook's feedback lists it, and
the goal converges only once the maker has done it and the judge finds it done."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from goal_convergence.models import Goal
from goal_convergence.storage.store import Store
from tests.e2e.harness import ORACLE_MARK, ClaudeCode, Conversation, Script, fix, hook_outputs, two_bug_project
from tests.fakeapi import Message, text, tool_use

pytestmark = pytest.mark.e2e

TASK = "write NOTES.md saying what was fixed"


@pytest.fixture
def project(tmp_path) -> Path:
    return two_bug_project(tmp_path / "calc-project")


class PlanningJudge(Script):
    """A judge that keeps a plan: on the first green run it agrees but adds a task; once the task is open it
    completes it when NOTES.md is in the diff the input shows, and only then does the goal converge."""

    def __call__(self, body: dict) -> Message:
        system = body.get("system")
        if ORACLE_MARK not in (system if isinstance(system, str) else json.dumps(system)):
            return super().__call__(body)
        self.oracle_requests.append(body)
        oracle_input = json.loads(re.search(r"```json\n(.*)\n```", Conversation.text_of(body["messages"][0]),
                                            re.S).group(1))
        if any(not c["passed"] for c in oracle_input["conditions"]):
            return text(json.dumps({"converged": False, "reasons": ["a test fails"], "nextHint": "fix calc.py"}))
        plan = oracle_input.get("plan", [])
        if not plan:
            return text(json.dumps({"converged": True, "reasons": ["the tests pass"], "confidence": 0.9,
                                    "tasks": {"add": [TASK]}}))
        done = "NOTES.md" in oracle_input["diffStat"]
        still = [t["id"] for t in plan if t["state"] == "open"]
        return text(json.dumps({"converged": done, "reasons": ["NOTES.md " + ("written" if done else "missing")],
                                "confidence": 0.9, "nextHint": "" if done else TASK,
                                "tasks": {"complete": still if done else []}}))


def fix_both(calc: Path) -> list:
    """The maker's first turn in both tests: the two bugs of calc.py fixed."""
    return [fix(calc, "return a - b", "return a + b"),
            fix(calc, "def mul(a, b):\n    return a + b", "def mul(a, b):\n    return a * b"),
            text("Fixed add() and mul().")]


def test_the_judge_adds_a_task_and_the_goal_converges_only_after_the_maker_does_it(claude_bin, fake_api,
                                                                                    isolated_home, project):
    claude = ClaudeCode(claude_bin, fake_api, isolated_home, project)
    calc, notes = project / "calc.py", project / "NOTES.md"
    script = PlanningJudge({
        0: fix_both(calc),
        1: [tool_use("Write", {"file_path": str(notes), "content": "Fixed add() and mul() in calc.py.\n"}),
            text("Wrote NOTES.md.")],
    })
    fake_api.set_responder(script)
    events = claude.run("/goal-convergence:goal fix both bugs in calc.py --test 'python3 test_calc.py' "
                        "--oracle anthropic --max-iterations 5 --min-confidence 0.8")
    assert events[-1]["subtype"] == "success", events[-1]
    [goal] = Store().iter_all(Goal)
    assert (goal.state, goal.stop_reason, goal.spent.iterations) == ("converged", "converged", 2)
    assert [it.decision.action for it in goal.history] == ["continue", "converge"]
    assert [(t.id, t.title, t.state, t.added_by, t.added_in, t.done_in) for t in goal.tasks] == [
        ("t1", TASK, "done", "oracle", 1, 2)]
    assert goal.min_confidence == 0.8 and notes.is_file()
    first = hook_outputs(events, "Stop")[0]["hookSpecificOutput"]["additionalContext"]
    assert f"open tasks: t1 {TASK}" in first and f"  - t1 {TASK}" in first
    shown = [Conversation(b).shown() for b in script.maker_requests if Conversation(b).turn == 1]
    assert shown and f"  - t1 {TASK}" in shown[0]  # the maker itself was told
    assert len(script.oracle_requests) == 2


class UnsureJudge(Script):
    """A judge that agrees with every green run, unsure the first time and sure the second."""

    def __call__(self, body: dict) -> Message:
        system = body.get("system")
        if ORACLE_MARK not in (system if isinstance(system, str) else json.dumps(system)):
            return super().__call__(body)
        self.oracle_requests.append(body)
        sure = len(self.oracle_requests) > 1
        return text(json.dumps({"converged": True, "reasons": ["sure" if sure else "UNSURE-7: mul() is untested"],
                                "confidence": 0.95 if sure else 0.6}))


def test_a_converged_verdict_below_the_minimum_confidence_sends_the_maker_back(claude_bin, fake_api, isolated_home,
                                                                              project):
    claude = ClaudeCode(claude_bin, fake_api, isolated_home, project)
    calc = project / "calc.py"
    script = UnsureJudge({
        0: fix_both(calc),
        1: [tool_use("Write", {"file_path": str(project / "test_mul.py"), "content": "from calc import mul\n"
                                                                                      "assert mul(2, 3) == 6\n"}),
            text("Added a test for mul().")],
    })
    fake_api.set_responder(script)
    events = claude.run("/goal-convergence:goal fix both bugs in calc.py --test 'python3 test_calc.py' "
                        "--oracle anthropic --max-iterations 5 --min-confidence 0.9")
    assert events[-1]["subtype"] == "success", events[-1]
    [goal] = Store().iter_all(Goal)
    assert (goal.state, goal.spent.iterations) == ("converged", 2)
    assert "below the goal's minimum 0.9: counted as a veto (UNSURE-7" in goal.history[0].decision.notes[-1]
    first = hook_outputs(events, "Stop")[0]["hookSpecificOutput"]["additionalContext"]
    assert "only with confidence 0.6 (this goal needs 0.9): UNSURE-7: mul() is untested" in first
