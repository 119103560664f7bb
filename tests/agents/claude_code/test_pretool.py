"""PreToolUse: a session that owns an active goal is denied the judge's controls (goal-convergence's CLI,
package and launcher, and its files under the home); everything else, and every session without a goal,
gets no answer. The decisions through the plugin's launcher as Claude Code runs it, with real goals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from goal_convergence.agents.claude_code import pretool
from goal_convergence.agents.claude_code.guarded import Guarded
from goal_convergence.goals import creation, specs
from goal_convergence.storage.store import Store
from goal_convergence.system import insiders
from tests.conftest import REPO

LAUNCHER = [sys.executable, "-S", str(REPO / "scripts" / "goal-launch.py"), "hook", "pre-tool-use"]

DENIED = [
    "goal run goal-abcdefgh --oracle conditions",
    "cd x && goal new 'fix it' --check true",
    "$(which goal) pause",
    "`which goal` abandon",
    'bash -c "goal abandon"',
    "sh -lc 'cd /tmp; goal resume'",
    "eval 'goal pause'",
    "python -m goal_convergence run goal-abcdefgh",
    "python3 -mgoal_convergence status",
    "python -c 'import goal_convergence.cli.app as a; a.main([\"pause\"])'",
    "python -c 'import subprocess; subprocess.run([\"goal\", \"pause\"])'",
    "G=goal; $G pause",
    "echo $(goal pause)",
    "ls | xargs goal abandon",
    "sudo -u me goal run x",
    "env FOO=1 goal status",
    "nohup goal run x &",
    "(cd /tmp && goal new y)",
    "if true; then goal abandon; fi",
    "true\ngoal pause",
    "find . -exec goal pause \\;",
    "uv run goal run x",
    "python3 ~/.claude/plugins/x/scripts/goal-launch.py hook stop",
    "echo \"unbalanced; goal pause",
    "cat ~/.claude/goals/goal-x.json",
    "sed -i s/active/converged/ $GOAL_CONVERGENCE_HOME/goals/goal-x.json",
    "jq . ${GOAL_CONVERGENCE_HOME}/baselines/goal-x.json",
    "cat ~/.claude/seal.key",
    "rm ~/.claude/installed-names.json",
    "rm ~/.claude/indexes/goal-x-0123456789ab.entries",
    "cp /tmp/x \"$HOME/.claude/makers/1-2\"",
    "ls ~/.claude/go*",
    "grep -r expect ~/.claude",
    "cd ~/.claude && cat goals/goal-x.json",
]

ALLOWED = [
    "git log --grep goal",
    "echo goal",
    "pytest tests/test_goal.py",
    'goal blocked "the test expects 5 for add(2, 2)"',
    "cat ~/.claude/settings.json",
    "ls ~/.claude/projects/",
    "echo 'goal run x'",
    "git commit -m 'make goal run faster'",
    "find . -name goal",
    "which goal",
    "timeout 60 pytest -q",
    "ls src/goal_convergence/",
    "python -m pytest -q",
]


@pytest.fixture
def guarded(gc_home, tmp_path) -> Guarded:
    (gc_home / "goals").mkdir(parents=True)
    (gc_home / "goals" / "goal-x.json").write_text("{}")
    (tmp_path / "work").mkdir()
    return Guarded(gc_home, str(tmp_path / "work"))


@pytest.mark.parametrize("command", DENIED)
def test_a_command_that_reaches_the_judge_is_refused(guarded, command):
    assert pretool.refusal("Bash", {"command": command}, guarded)


@pytest.mark.parametrize("command", ALLOWED)
def test_an_ordinary_command_is_let_through(guarded, command):
    assert pretool.refusal("Bash", {"command": command}, guarded) is None


def test_paths_are_resolved_from_the_sessions_folder_through_symlinks(guarded, gc_home, tmp_path):
    work = Path(guarded.cwd)
    (work / "notes").symlink_to(gc_home / "goals")
    goal_file = str(gc_home / "goals" / "goal-x.json")
    for tool, key, path in [("Edit", "file_path", goal_file), ("Write", "file_path", "notes/goal-x.json"),
                            ("MultiEdit", "file_path", os.path.relpath(goal_file, work)),
                            ("NotebookEdit", "notebook_path", str(gc_home / "baselines" / "n.ipynb")),
                            ("Read", "file_path", "notes/goal-x.json"),
                            ("Read", "file_path", str(gc_home / "seal.key"))]:
        assert pretool.refusal(tool, {key: path}, guarded), (tool, path)
    assert "searches" in pretool.refusal("Grep", {"pattern": "expect", "path": str(gc_home)}, guarded)
    assert pretool.refusal("Grep", {"pattern": "x", "path": "notes"}, guarded)
    assert pretool.refusal("Glob", {"pattern": f"{gc_home}/goals/*.json"}, guarded)
    assert pretool.refusal("Glob", {"pattern": "**/*.json", "path": str(gc_home.parent)}, guarded)  # walks into it
    for tool, tool_input in [("Edit", {"file_path": "calc.py"}),
                             ("Read", {"file_path": str(gc_home / "settings.json")}),
                             ("Grep", {"pattern": "goal"}), ("Glob", {"pattern": "**/*.py"}),
                             ("Write", {"file_path": str(gc_home / "worktrees" / "goal-x" / "a.py")}),
                             ("WebFetch", {"url": "https://example.com"}), ("Bash", {})]:
        assert pretool.refusal(tool, tool_input, guarded) is None, tool


def test_a_home_of_its_own_is_guarded_whole_but_its_worktrees(tmp_path):
    home = tmp_path / "gc"
    (home / "newer-file").parent.mkdir()
    (home / "newer-file").write_text("")
    guarded = Guarded(home, str(tmp_path))
    assert guarded.reaches(str(home / "newer-file"))
    assert guarded.reaches(str(home / "worktrees" / "a.py")) is None


def hook(payload: dict, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(LAUNCHER, input=json.dumps(payload).encode(), capture_output=True, check=True,
                          env={**os.environ, "PATH": "/nonexistent", **(env or {})})


def test_a_session_without_a_goal_gets_no_answer_from_the_fast_path_alone(git_repo, gc_home):
    """No `goal` on PATH: the launcher could not start the CLI, so an answer of nothing is the fast path's."""
    creation.new_goal(Store(), specs.GoalSpec(objective="x", project=git_repo, checks=["true"],
                                              oracle_provider="conditions", session_id="the-owner"))
    done = hook({"session_id": "another-session", "cwd": str(git_repo), "tool_name": "Bash",
                 "tool_input": {"command": "goal run x --oracle conditions"}})
    assert (done.stdout, done.stderr) == (b"", b"")
    assert not (gc_home / "makers").exists()


def test_the_owning_session_is_denied_with_the_way_out_and_its_process_recorded(git_repo, gc_home):
    goal = creation.new_goal(Store(), specs.GoalSpec(objective="x", project=git_repo, checks=["true"],
                                                     oracle_provider="conditions", session_id="the-owner"))
    payload = {"session_id": "the-owner", "cwd": str(git_repo), "hook_event_name": "PreToolUse", "tool_name": "Bash"}
    done = hook({**payload, "tool_input": {"command": f"goal run {goal.goal_id} --oracle conditions"}})
    told = json.loads(done.stdout)["hookSpecificOutput"]
    assert (told["hookEventName"], told["permissionDecision"]) == ("PreToolUse", "deny")
    assert "runs the goal-convergence CLI (`goal run`)" in told["permissionDecisionReason"]
    assert goal.goal_id in told["permissionDecisionReason"] and 'goal blocked "why"' in told["permissionDecisionReason"]
    assert hook({**payload, "tool_input": {"command": "git status"}}).stdout == b""
    # this test's process stands where Claude Code would: the launcher's first ancestor that is not ours
    [record] = (gc_home / "makers").iterdir()
    assert (record.name.split("-")[0], record.read_text()) == (str(os.getpid()), goal.goal_id)
    child = subprocess.Popen(["sleep", "5"])  # what the session runs is inside its maker
    try:
        assert insiders.inside(gc_home, child.pid) == goal.goal_id
    finally:
        child.kill()
        child.wait()


def test_an_internal_failure_lets_the_call_through_with_one_line(git_repo, gc_home):
    creation.new_goal(Store(), specs.GoalSpec(objective="x", project=git_repo, checks=["true"],
                                              oracle_provider="conditions", session_id="the-owner"))
    payload = {"session_id": "the-owner", "cwd": str(git_repo), "tool_name": "Bash", "tool_input": {"command": "ls"}}
    # a home that is a file where the makers folder should be: recording fails, the decision still stands
    (gc_home / "makers").write_text("")
    assert hook(payload).stdout == b""
    bad = {**payload, "tool_input": {"command": "goal pause"}}
    assert json.loads(hook(bad).stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    # the decision itself failing (a path no file system takes): one line for the person, and no deny
    broken = {**payload, "tool_name": "Read", "tool_input": {"file_path": "calc\u0000.py"}}
    done = subprocess.run([sys.executable, "-m", "goal_convergence", "hook", "pre-tool-use"],
                          input=json.dumps(broken).encode(), capture_output=True, check=True)
    told = json.loads(done.stdout)
    assert list(told) == ["systemMessage"] and "the pre-tool-use hook failed (ValueError" in told["systemMessage"]
