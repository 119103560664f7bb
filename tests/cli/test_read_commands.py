"""Every read command finds "the goal" the same way (goals/lookup.py `shown`): the one named, else the open goal
of this session or project, else the most recent one, and then it says so (issue 28, item 1)."""

from __future__ import annotations

import json

from goal_convergence.agents.claude_code.slash import run_command
from tests.conftest import run_goal as goal


def converged(repo) -> str:
    done = goal(repo, "run", "make it pass", "--test", "true", "--oracle", "conditions", "--maker-cmd", "true",
                "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["goalId"]


def test_status_report_check_and_list_show_the_goal_that_just_converged(git_repo):
    goal_id = converged(git_repo)
    said = f"no open goal in {git_repo}; showing the most recent one, {goal_id}, converged"

    status = goal(git_repo, "status")
    assert status.returncode == 0, status.stderr
    first, second, state = status.stdout.splitlines()[:3]
    assert first == f"({said} (`goal list --all` lists every goal))"
    assert second.startswith(f"{goal_id}: make it pass") and state == "state: converged"

    as_json = goal(git_repo, "status", "--json")
    assert json.loads(as_json.stdout)["goalId"] == goal_id and said in as_json.stderr

    report = goal(git_repo, "report")
    assert report.returncode == 0 and said in report.stdout and f"wrote the report of {goal_id}" in report.stdout
    check = goal(git_repo, "check")
    assert check.returncode == 0 and said in check.stdout

    listed = goal(git_repo, "list").stdout.strip()
    assert listed == (f"no open goals; the most recent, {goal_id}, converged: make it pass "
                      f"(`goal list --all` lists 1 goal)")
    slash = run_command("goal", "status", session_id=None, cwd=str(git_repo)).text
    assert slash.startswith(f"({said}") and f"{goal_id}: make it pass" in slash


def test_an_open_goal_comes_before_a_newer_one_that_ended(git_repo):
    open_one = json.loads(goal(git_repo, "new", "keep going", "--test", "true", "--oracle", "conditions",
                               "--json").stdout)["goalId"]
    goal(git_repo, "pause", open_one)
    converged(git_repo)
    status = goal(git_repo, "status")
    assert status.stdout.startswith(f"{open_one}: keep going"), status.stdout  # no note: it is the open goal


def test_a_project_with_no_goal_says_how_to_start_one(git_repo):
    status = goal(git_repo, "status")
    assert status.returncode == 66 and "no goal in" in status.stderr and "goal new OBJECTIVE" in status.stderr
    assert goal(git_repo, "list").stdout.startswith("no goals yet; start one with `goal new OBJECTIVE`")
