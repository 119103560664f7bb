"""A newline (or a space, or a leading dash) in a folder's name is data, not a separator: every git call takes
paths after ``--``, through -z lists, or one a call, so a project in such a folder works like any other."""

from __future__ import annotations

import json
import sys

import pytest

from goal_convergence.vcs import git as vcs_git
from tests.conftest import git, run_goal


@pytest.fixture(params=["my\nproject", "two  words ", "-dash\nand\nlines"])
def odd_repo(tmp_path, request):
    repo = tmp_path / request.param
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "test_a.py").write_text("def test_a():\n    assert 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "init")
    return repo


def test_the_repository_of_an_odd_folder_is_found(odd_repo):
    repo = vcs_git.open_repo(odd_repo)
    assert repo is not None and repo.top == odd_repo.resolve()


def test_goal_new_and_a_run_with_attempts_work_in_an_odd_folder(odd_repo, tmp_path):
    (tmp_path / "check.py").write_text("raise SystemExit(1)\n")
    made = run_goal(odd_repo, "new", "make it pass", "--check", f"{sys.executable} {tmp_path / 'check.py'}",
                    "--oracle", "conditions", "--max-iterations", "2", "--json")
    assert made.returncode == 0, made.stderr
    goal = json.loads(made.stdout)
    assert goal["projectRoot"] == str(odd_repo.resolve())
    ran = run_goal(odd_repo, "run", goal["goalId"], "--attempts", "2", "--maker-cmd", "true")
    assert ran.returncode == 4, ran.stderr  # ceiling: both attempts ran in their worktrees
    status = json.loads(run_goal(odd_repo, "status", goal["goalId"], "--json").stdout)
    assert sorted({it["attempt"] for it in status["history"]}) == [1, 2]
    assert all(it["checkpoint"] for it in status["history"]), "no checkpoint taken in the odd folder"
