"""Checkpoints in real git repositories: each iteration's tree kept as a commit without touching the
user's branch, index, stash or files; `goal diff`; `goal rewind` (exact, undoable, refusing unsaved
changes, --best); refs removed on abandon and dismiss; off outside git, above the size limit, or when a
remote would push them."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from goal_convergence.agents.claude_code import hooks, slash
from goal_convergence.loop import engine
from goal_convergence.models import (Checkpoint, ConditionEvidence, Decision, Goal, Iteration, Runner, TriageItem,
                                     now_iso)
from goal_convergence.storage.store import Store
from goal_convergence.system import orphans
from goal_convergence.vcs import checkpoint
from tests.conftest import git, run_goal
from tests.vcs.test_git_safety import plant

MAKER = """import os, pathlib, sys
k = int(os.environ["GOAL_ITERATION"])
p = pathlib.Path
p("n.txt").write_text(f"{k}\\n")
p("junk.log").write_text(f"ignored {k}\\n")
if k == 1:
    p("a.txt").write_text("one\\n")
if k == 2:
    os.remove("a.txt")
    p("b.txt").write_text("two\\n")
    p("README.md").write_text("changed\\n")
    os.makedirs("sub/deep", exist_ok=True)
    p("sub/deep/c.txt").write_text("deep\\n")
    os.chmod("tool.sh", 0o755)
if k == 3:
    p("d.txt").write_text("three\\n")
"""
START = {".gitignore": (b"*.log\n", False), "README.md": (b"fixture\n", False), "tool.sh": (b"echo hi\n", False)}
AT_1 = {**START, "n.txt": (b"1\n", False), "a.txt": (b"one\n", False)}
AT_3 = {**START, "n.txt": (b"3\n", False), "b.txt": (b"two\n", False), "README.md": (b"changed\n", False),
        "tool.sh": (b"echo hi\n", True), "sub/deep/c.txt": (b"deep\n", False), "d.txt": (b"three\n", False)}


def files(root: Path) -> dict[str, tuple[bytes, bool]]:
    """Every file of the project but git's own and the ignored ones: its bytes and whether it is executable."""
    found = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            path = Path(folder) / name
            if path.suffix != ".log":
                found[path.relative_to(root).as_posix()] = (path.read_bytes(), bool(path.stat().st_mode & stat.S_IXUSR))
    return found


@pytest.fixture
def repo(git_repo: Path) -> Path:
    (git_repo / ".gitignore").write_text("*.log\n")
    (git_repo / "tool.sh").write_text("echo hi\n")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "tool")
    return git_repo


@pytest.fixture
def maker(tmp_path: Path) -> str:
    script = tmp_path / "maker.py"
    script.write_text(MAKER)
    return f"{sys.executable} {script}"


def run(repo: Path, maker: str, *checks: str, iterations: int = 6) -> tuple[subprocess.CompletedProcess, Goal]:
    flags = [a for c in checks for a in ("--check", c)]
    done = run_goal(repo, "run", "count to three", *flags, "--oracle", "conditions", "--maker-cmd", maker,
                    "--max-iterations", str(iterations), "--json")
    [goal] = Store().iter_all(Goal)
    return done, goal


def refs(repo: Path) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname)", "refs/goal-convergence/").split()


def test_a_goal_converging_in_three_iterations_has_three_checkpoints_chained_from_its_base(repo, maker):
    base = git(repo, "rev-parse", "HEAD").strip()
    done, goal = run(repo, maker, "grep -qx 3 n.txt")
    assert done.returncode == 0, done.stderr
    assert [it.checkpoint.ref for it in goal.history] == [f"refs/goal-convergence/{goal.goal_id}/{n}"
                                                          for n in (1, 2, 3)]
    assert refs(repo) == [it.checkpoint.ref for it in goal.history]
    commits = [it.checkpoint.commit for it in goal.history]
    parents = [git(repo, "rev-parse", f"{c}^").strip() for c in commits]
    assert parents == [base, *commits[:2]]
    assert git(repo, "show", f"{commits[1]}:n.txt") == "2\n"
    assert git(repo, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert git(repo, "rev-parse", "HEAD").strip() == base  # no commit on the user's branch


def test_a_snapshot_leaves_status_index_stash_and_files_alone(repo, make_goal):
    (repo / "README.md").write_text("staged\n")
    git(repo, "add", "README.md")
    (repo / "README.md").write_text("in the work tree\n")
    (repo / "tool.sh").write_text("stashed\n")
    git(repo, "stash", "push", "-q", "--", "tool.sh")
    (repo / "new.txt").write_text("untracked\n")
    (repo / "build.log").write_text("ignored\n")
    before = (git(repo, "status", "--porcelain=v2", "--untracked-files=all"), (repo / ".git/index").read_bytes(),
              git(repo, "stash", "list"), git(repo, "rev-parse", "HEAD", "refs/stash"), files(repo))
    goal = make_goal(project_root=str(repo), base_commit=git(repo, "rev-parse", "HEAD").strip())

    taken = checkpoint.take(goal, 1)

    assert taken.off is None and taken.checkpoint is not None
    after = (git(repo, "status", "--porcelain=v2", "--untracked-files=all"), (repo / ".git/index").read_bytes(),
             git(repo, "stash", "list"), git(repo, "rev-parse", "HEAD", "refs/stash"), files(repo))
    assert after == before
    commit = taken.checkpoint.commit
    held = git(repo, "ls-tree", "-r", "--name-only", commit).split()
    assert held == [".gitignore", "README.md", "new.txt", "tool.sh"]  # untracked in, ignored out
    assert git(repo, "show", f"{commit}:README.md") == "in the work tree\n"  # the file, not the staged copy
    assert git(repo, "show", f"{commit}:tool.sh") == "echo hi\n"  # the stashed change is not in the tree


def test_rewind_restores_iteration_1_exactly_and_its_undo_brings_the_rest_back(repo, maker):
    done, goal = run(repo, maker, "grep -qx 3 n.txt")
    assert files(repo) == AT_3 and (repo / "junk.log").read_text() == "ignored 3\n"

    back = run_goal(repo, "rewind", goal.goal_id, "1")

    assert back.returncode == 0, back.stderr
    assert files(repo) == AT_1
    assert not (repo / "sub").exists()  # the folders of files added later go with them
    assert (repo / "junk.log").read_text() == "ignored 3\n"  # ignored files are not the tree's
    assert f"undo with: goal rewind {goal.goal_id} rewind-1" in back.stdout
    assert git(repo, "diff", "--cached") == ""  # the user's index is not changed

    undo = run_goal(repo, "rewind", goal.goal_id, "rewind-1")
    assert undo.returncode == 0, undo.stderr
    assert files(repo) == AT_3
    assert f"goal rewind {goal.goal_id} rewind-2" in undo.stdout
    again = run_goal(repo, "rewind", goal.goal_id, "3")
    assert again.returncode == 0 and "nothing changed" in again.stdout


def test_rewind_refuses_changes_no_checkpoint_holds_unless_forced_and_keeps_them_for_an_undo(repo, maker):
    _, goal = run(repo, maker, "grep -qx 3 n.txt")
    (repo / "b.txt").write_text("my own work\n")

    refused = run_goal(repo, "rewind", goal.goal_id, "1")

    assert refused.returncode == 65
    assert "no checkpoint" in refused.stderr and "--force" in refused.stderr
    assert (repo / "b.txt").read_text() == "my own work\n" and refs(repo)[-1].endswith("/3")
    forced = run_goal(repo, "rewind", goal.goal_id, "1", "--force")
    assert forced.returncode == 0 and files(repo) == AT_1
    assert run_goal(repo, "rewind", goal.goal_id, "rewind-1").returncode == 0
    assert (repo / "b.txt").read_text() == "my own work\n"


def test_rewind_refuses_while_a_live_goal_run_works_the_goal(repo, maker, store):
    _, goal = run(repo, maker, "grep -qx 3 n.txt")
    runner = subprocess.Popen(["sleep", "30"])  # stands for the `goal run` of another process
    try:
        def claimed(g: Goal) -> None:
            g.runner = Runner(pid=runner.pid, host=orphans.host(), started=orphans.started(runner.pid),
                              since=now_iso(), seen_at=now_iso())
        store.update(Goal, goal.goal_id, claimed)
        before = files(repo)

        refused = run_goal(repo, "rewind", goal.goal_id, "1")

        assert refused.returncode == 70 and f"pid {runner.pid}" in refused.stderr, refused.stderr
        assert "goal pause" in refused.stderr and files(repo) == before
    finally:
        runner.kill()
        runner.wait()
    assert run_goal(repo, "rewind", goal.goal_id, "1").returncode == 0  # a dead runner's claim does not stop it
    assert files(repo) == AT_1


def test_diff_shows_what_an_iteration_changed_or_between_two(repo, maker):
    _, goal = run(repo, maker, "grep -qx 3 n.txt")
    second = run_goal(repo, "diff", goal.goal_id, "2")
    assert second.returncode == 0
    assert "-1\n+2\n" in second.stdout and "b/sub/deep/c.txt" in second.stdout and "d.txt" not in second.stdout
    latest = run_goal(repo, "diff", goal.goal_id).stdout
    assert "b/d.txt" in latest and "c.txt" not in latest and "a.txt" not in latest
    span = run_goal(repo, "diff", goal.goal_id, "1", "3", "--stat").stdout
    assert "a.txt" in span and "d.txt" in span and "README.md" in span and "@@" not in span
    assert "+1\n" in run_goal(repo, "diff", goal.goal_id, "0", "1").stdout
    missing = run_goal(repo, "diff", goal.goal_id, "7")
    assert missing.returncode == 66 and "iterations with one: 1, 2, 3" in missing.stderr


ESCALATES = ("grep -qx 2 n.txt", "test -f b.txt", "test -f never.txt")  # passing: 0, then 2, then 1


def test_an_escalated_goals_triage_item_names_its_best_checkpoint_and_rewind_best_restores_it(repo, maker):
    done, goal = run(repo, maker, *ESCALATES, iterations=3)
    assert done.returncode == 4 and goal.state == "escalated"
    item = Store().load(TriageItem, goal.escalation.triage_id)
    assert item.best_checkpoint is not None
    assert (item.best_checkpoint.iteration, item.best_checkpoint.passing, item.best_checkpoint.conditions) == (2, 2, 3)
    assert item.best_checkpoint.restore == f"goal rewind {goal.goal_id} 2"
    shown = run_goal(repo, "triage", "show", item.triage_id).stdout
    assert ("best checkpoint: iteration 2 (2/3 conditions passing); "
            f"restore it with `goal rewind {goal.goal_id} 2`") in shown

    assert run_goal(repo, "rewind", goal.goal_id, "--best").returncode == 0
    assert files(repo)["n.txt"] == (b"2\n", False) and (repo / "sub/deep/c.txt").exists()
    assert run_goal(repo, "rewind", goal.goal_id, "2", "--best").returncode == 64


def test_best_is_the_most_conditions_passing_and_of_equals_the_latest(make_goal):
    def it(number: int, *passed: bool, kept: bool = True) -> Iteration:
        return Iteration(number=number, started_at="2026-01-01T00:00:00Z", ended_at="2026-01-01T00:00:00Z",
                         conditions=[ConditionEvidence(index=i, type="custom_command", command="x", passed=p,
                                                       exit_code=0) for i, p in enumerate(passed)],
                         decision=Decision(action="continue"),
                         checkpoint=Checkpoint(commit="a" * 40, ref=f"refs/x/{number}") if kept else None)

    goal = make_goal(history=[it(1, True, False), it(2, True, True), it(3, False, True), it(4, True, True),
                              it(5, False, False), it(6, True, True, kept=False)])
    assert checkpoint.best(goal).number == 4
    assert checkpoint.best(make_goal(history=[it(1, True, kept=False)])) is None


def one_iteration(repo: Path) -> Goal:
    """A goal of this repository with one iteration behind it, still active."""
    made = run_goal(repo, "new", "keep it green", "--check", "test -f README.md", "--check", "test -f never.txt",
                    "--oracle", "conditions", "--json")
    goal_id = json.loads(made.stdout)["goalId"]
    return engine.run_iteration(Store(), goal_id, engine.MakerReport()).goal


def test_abandon_removes_the_goals_refs_unless_kept(repo):
    first, second = one_iteration(repo), one_iteration(repo)
    assert len(refs(repo)) == 2 and first.history[0].checkpoint is not None
    assert run_goal(repo, "abandon", first.goal_id).returncode == 0
    assert refs(repo) == [f"refs/goal-convergence/{second.goal_id}/1"]
    assert run_goal(repo, "abandon", second.goal_id, "--keep-checkpoints").returncode == 0
    assert refs(repo) == [f"refs/goal-convergence/{second.goal_id}/1"]


def test_dismissing_the_triage_item_removes_the_refs_unless_kept(repo, maker, tmp_path):
    _, goal = run(repo, maker, *ESCALATES, iterations=3)
    assert len(refs(repo)) == 3
    kept = run_goal(repo, "run", "never", "--check", "test -f never.txt", "--oracle", "conditions", "--maker-cmd",
                    "true", "--max-iterations", "1", "--json")
    other = json.loads(kept.stdout)
    assert run_goal(repo, "triage", "dismiss", other["triageId"], "--keep-checkpoints").returncode == 0
    assert run_goal(repo, "triage", "dismiss", goal.escalation.triage_id).returncode == 0
    assert refs(repo) == [f"refs/goal-convergence/{other['goalId']}/1"]


def test_outside_git_checkpoints_are_off_and_say_why(tmp_path):
    folder = tmp_path / "plain"
    folder.mkdir()
    goal = one_iteration(folder)
    assert goal.history[0].checkpoint is None
    assert "not in a git repository" in goal.checkpoints_off
    assert any(n.startswith("checkpoints are off:") for n in goal.history[0].decision.notes)
    told = hooks.carry_on(goal, goal.history[0], "")["systemMessage"]  # what the session shows the user
    assert told.endswith(f"the session carries on; checkpoints are off: {goal.checkpoints_off}")
    assert "checkpoints: OFF (" in run_goal(folder, "status", goal.goal_id).stdout
    refused = run_goal(folder, "rewind", goal.goal_id, "1")
    assert refused.returncode == 69 and "checkpoints" in refused.stderr


def test_above_the_size_limit_checkpoints_are_off_until_the_tree_fits_again(repo, monkeypatch):
    monkeypatch.setenv("GOAL_CONVERGENCE_CHECKPOINT_MAX_MB", "1")
    (repo / "data.bin").write_bytes(b"x" * (2 << 20))
    objects = git(repo, "count-objects")
    goal = one_iteration(repo)
    assert goal.history[0].checkpoint is None and "above the 1 MB" in goal.checkpoints_off
    assert refs(repo) == [] and git(repo, "count-objects") == objects  # nothing was stored
    (repo / "data.bin").unlink()
    goal = engine.run_iteration(Store(), goal.goal_id, engine.MakerReport()).goal
    assert goal.history[1].checkpoint is not None and goal.checkpoints_off is None


@pytest.mark.parametrize("key, value", [("remote.origin.push", "refs/*:refs/*"), ("remote.origin.mirror", "true"),
                                        ("remote.origin.push", "+refs/goal-convergence/*:refs/goal-convergence/*")])
def test_a_remote_that_would_push_them_turns_checkpoints_off(repo, make_goal, key, value):
    git(repo, "remote", "add", "origin", str(repo.parent / "elsewhere.git"))
    git(repo, "config", key, value)
    taken = checkpoint.take(make_goal(project_root=str(repo)), 1)
    assert taken.checkpoint is None and key in taken.off and refs(repo) == []


def test_a_plain_push_refspec_leaves_them_on(repo, make_goal):
    git(repo, "remote", "add", "origin", str(repo.parent / "elsewhere.git"))
    git(repo, "config", "remote.origin.push", "refs/heads/*:refs/heads/*")
    assert checkpoint.take(make_goal(project_root=str(repo)), 1).checkpoint is not None


def test_snapshot_and_rewind_run_nothing_the_repository_plants(repo, maker, tmp_path):
    _, goal = run(repo, maker, "grep -qx 3 n.txt")
    marker = tmp_path / "ran"
    plant(repo, marker)
    (repo / "calc.py").write_text("x = 1\n")  # a file the planted clean filter would see
    assert checkpoint.take(goal, 9).checkpoint is not None
    assert run_goal(repo, "rewind", goal.goal_id, "1", "--force").returncode == 0
    assert run_goal(repo, "diff", goal.goal_id, "2").returncode == 0
    assert files(repo) == AT_1
    assert not marker.exists(), marker.read_text()


def test_the_slash_command_diffs_and_rewinds_the_projects_goal(repo, maker):
    _, goal = run(repo, maker, "grep -qx 3 n.txt")
    shown = slash.run_command("goal", "diff 2 --stat", session_id=None, cwd=str(repo))
    assert "(exit 0)" in shown.text and "sub/deep/c.txt" in shown.text
    back = slash.run_command("goal", f"rewind {goal.goal_id} 1", session_id=None, cwd=str(repo))
    assert "(exit 0)" in back.text and f"goal rewind {goal.goal_id} rewind-1" in back.text
    assert files(repo) == AT_1

