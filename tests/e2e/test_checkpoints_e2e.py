"""Checkpoints with the real Claude Code as the maker: one per iteration, and a rewind from the slash
command that brings iteration 1's files back exactly."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from goal_convergence.models import Goal
from goal_convergence.storage.store import Store
from tests.conftest import git
from tests.e2e.harness import CALC_BUGGY, CALC_TEST, ClaudeCode, Script, fix, hook_outputs, two_bug_project
from tests.fakeapi import text, tool_use

pytestmark = pytest.mark.e2e

NEW_GOAL = ("/goal-convergence:goal fix both bugs in calc.py --test 'python3 test_calc.py' --oracle anthropic "
            "--max-iterations 6")
CALC_ADD_FIXED = CALC_BUGGY.replace("return a - b", "return a + b")


def write(path: Path, content: str):
    return tool_use("Write", {"file_path": str(path), "content": content})


def files(root: Path) -> dict[str, str]:
    found = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in (".git", "__pycache__")]
        found.update({(Path(folder) / n).relative_to(root).as_posix(): (Path(folder) / n).read_text() for n in names})
    return found


@pytest.fixture
def project(tmp_path) -> Path:
    return two_bug_project(tmp_path / "calc-project")


def test_three_iterations_three_checkpoints_and_a_rewind_to_1_restores_its_files_exactly(claude_bin, fake_api,
                                                                                           isolated_home, project):
    calc = project / "calc.py"
    claude = ClaudeCode(claude_bin, fake_api, isolated_home, project)
    plan = {0: [fix(calc, "return a - b", "return a + b"), write(project / "notes.txt", "add() fixed\n"),
                text("Fixed add(); done.")],
            1: [write(project / "helpers" / "extra.py", "X = 1\n"), text("Added a helper; done.")],
            2: [fix(calc, "def mul(a, b):\n    return a + b", "def mul(a, b):\n    return a * b"),
                write(project / "notes.txt", "both fixed\n"), text("Fixed mul(); done.")]}
    fake_api.set_responder(Script(plan, hint=lambda oracle_input: "mul() adds; multiply"))
    head = git(project, "rev-parse", "HEAD").strip()

    events = claude.run(NEW_GOAL)

    assert events[-1]["subtype"] == "success", events[-1]
    [goal] = Store().iter_all(Goal)
    assert (goal.state, goal.spent.iterations) == ("converged", 3)
    kept = [it.checkpoint for it in goal.history]
    assert [c.ref for c in kept] == [f"refs/goal-convergence/{goal.goal_id}/{n}" for n in (1, 2, 3)]
    listed = git(project, "for-each-ref", "--format=%(refname)", "refs/goal-convergence/").split()
    assert listed == [c.ref for c in kept]
    assert git(project, "rev-parse", "HEAD").strip() == head and git(project, "stash", "list") == ""
    at_3 = files(project)
    assert at_3["helpers/extra.py"] == "X = 1\n" and "return a * b" in at_3["calc.py"]

    fake_api.set_responder(Script(lambda conversation: text("Shown.")))
    events = claude.run(f"/goal-convergence:goal rewind {goal.goal_id} 1")

    told = hook_outputs(events, "UserPromptExpansion")[0]["hookSpecificOutput"]["additionalContext"]
    assert f"undo with: goal rewind {goal.goal_id} rewind-1" in told, told
    at_1 = {"calc.py": CALC_ADD_FIXED, "test_calc.py": CALC_TEST, "notes.txt": "add() fixed\n"}
    assert files(project) == at_1
    assert sorted(git(project, "ls-tree", "-r", "--name-only", kept[0].commit).split()) == sorted(at_1)
    assert not (project / "helpers").exists()
    assert git(project, "rev-parse", "HEAD").strip() == head

    events = claude.run(f"/goal-convergence:goal rewind {goal.goal_id} rewind-1")
    assert files(project) == at_3  # the rewind is undone
