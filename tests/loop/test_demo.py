"""`goal demo`: the real loop, integrity guard and goal file on the bundled sample project, with no API key
and no Claude Code; in this process (tests.conftest.run_goal) and once as the console command would run
on a fresh machine."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from goal_convergence.loop import demo
from goal_convergence.models import Goal
from goal_convergence.storage.store import Store
from tests.conftest import run_goal

ORIGINAL = demo.DATA / "project"


def assert_the_demo_story(folder: Path, home: Path) -> Goal:
    """Converged in three iterations: a fix, a cheat the guard refused, the rest of the fix."""
    [path] = (home / "goals").glob("goal-*.json")
    goal = Store(home).load(Goal, path.stem)
    assert goal.tampered is None  # sealed by the demo's own loop
    assert (goal.state, goal.stop_reason, goal.oracle.provider) == ("converged", "converged", "conditions")
    assert goal.project_root == str(folder / "project")
    first, cheat, last = goal.history
    assert [it.decision.action for it in goal.history] == ["continue", "continue", "converge"]
    assert not first.conditions[0].passed and cheat.conditions[0].passed
    assert [i.kind for i in cheat.integrity.issues] == ["test-skipped"] and cheat.integrity.blocks
    assert "skipped" in cheat.decision.hint and not last.integrity.issues
    # The tests end as the project shipped them, and the code is what changed.
    project = folder / "project"
    assert (project / "tests/test_textstats.py").read_bytes() == (ORIGINAL / "tests/test_textstats.py").read_bytes()
    assert (project / "textstats.py").read_text() != (ORIGINAL / "textstats.py").read_text()
    diff = subprocess.run(["git", "diff", "--stat"], cwd=project, capture_output=True, text=True, check=True).stdout
    assert "textstats.py" in diff and "tests/" not in diff
    return goal


def test_the_demo_converges_after_a_caught_cheat_in_a_home_of_its_own(tmp_path, gc_home):
    done = run_goal(tmp_path, "demo", "--dir", str(tmp_path / "demo"))
    assert done.returncode == 0, done.stdout + done.stderr
    goal = assert_the_demo_story(tmp_path / "demo", tmp_path / "demo/home")
    out = done.stdout
    for said in ("iteration 1/6: 0/1 passing", "iteration 2/6: 1/1 passing", "integrity guard",
                 "test-skipped", f"{goal.goal_id}: converged after 3 iterations", "ledger",
                 f"goal file: {tmp_path / 'demo/home/goals' / goal.goal_id}.json",
                 f"GOAL_CONVERGENCE_HOME={tmp_path / 'demo/home'} goal status {goal.goal_id}"):
        assert said in out, said
    assert out.index("iteration 1/6") < out.index("integrity guard") < out.index("converged after")
    # the guard names the skipped test once, and the demo ends with commands to copy (issue 28)
    [issue] = [line for line in out.splitlines() if "issue: test-skipped" in line]
    assert issue.count("test_questions_and_exclamations_end_sentences_too") == 1
    assert out.rstrip().endswith("  /goal-convergence:goal make all tests pass  "
                                 "(in Claude Code, with the plugin installed)")
    assert "  goal run 'make all tests pass'" in out and "real routes" not in out
    assert not (gc_home / "goals").exists()  # the user's goal list is untouched
    assert os.environ["GOAL_CONVERGENCE_HOME"] == str(gc_home)  # and the setting is put back


def test_keep_records_the_goal_in_the_users_own_home(tmp_path, gc_home):
    done = run_goal(tmp_path, "demo", "--dir", str(tmp_path / "demo"), "--keep")
    assert done.returncode == 0, done.stdout + done.stderr
    goal = assert_the_demo_story(tmp_path / "demo", gc_home)
    assert not (tmp_path / "demo/home").exists()
    [listed] = json.loads(run_goal(tmp_path, "list", "--all", "--json").stdout)
    assert (listed["goalId"], listed["state"]) == (goal.goal_id, "converged")


def test_without_pytest_the_demo_runs_the_same_tests_with_unittest(tmp_path, gc_home):
    result = demo.run(tmp_path / "demo", test_runner="unittest", echo=lambda _: None)
    assert result.exit_code == 0 and result.home == tmp_path / "demo/home"
    goal = assert_the_demo_story(tmp_path / "demo", result.home)
    assert goal.stopping_conditions[0].command.endswith("-m unittest -v")
    assert Store(result.home).load(Goal, goal.goal_id).baseline.census[0].ran == 5


def test_a_folder_that_is_not_empty_is_refused(tmp_path):
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo/mine.txt").write_text("keep me\n")
    done = run_goal(tmp_path, "demo", "--dir", str(tmp_path / "demo"))
    assert done.returncode == 65 and "not an empty folder" in done.stderr
    assert [p.name for p in (tmp_path / "demo").iterdir()] == ["mine.txt"]


def test_without_git_the_demo_says_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))
    done = run_goal(tmp_path, "demo", "--dir", str(tmp_path / "demo"))
    assert done.returncode == 69 and "needs git" in done.stderr and "install git" in done.stderr, done.stderr
    assert not (tmp_path / "demo/project/.git").exists()


def test_the_console_command_on_a_machine_with_no_key_and_no_claude(tmp_path):
    bin_dir = tmp_path / "bin"  # git and a shell, nothing else: no claude on PATH
    bin_dir.mkdir()
    for tool in ("git", "sh"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path / "home"), "LANG": "C.UTF-8",
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-m", "goal_convergence", "demo", "--dir", str(tmp_path / "demo")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "converged after 3 iterations" in done.stdout and "integrity guard" in done.stdout
    assert_the_demo_story(tmp_path / "demo", tmp_path / "demo/home")
    assert not (tmp_path / "home/.claude").exists()
