"""Notifications when a goal ends: real goals, real `goal` subprocesses, a real notify command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from goal_convergence.goals import notify
from goal_convergence.storage.store import Store

GOAL = [sys.executable, "-m", "goal_convergence"]
# failures.txt is read through a script: a file the command line named would be check-defining.
CHECK = "sh check.sh"


@pytest.fixture
def project(git_repo: Path) -> Path:
    (git_repo / "check.sh").write_text("if [ -s failures.txt ]; then cat failures.txt; exit 1; fi\n")
    (git_repo / "failures.txt").write_text("FAILED test_a\nFAILED test_b\n")
    return git_repo


@pytest.fixture
def notified(gc_home: Path, tmp_path: Path) -> Path:
    """The home's notify command appends each event it is given to this file."""
    log = tmp_path / "notified.jsonl"
    gc_home.mkdir(parents=True, exist_ok=True)
    (gc_home / "config.toml").write_text(f"notify = {json.dumps(f'cat >> {log}')}\n")
    return log


def goal(project: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*GOAL, *args], cwd=project, capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


def new_goal(project: Path, *flags: str) -> str:
    done = goal(project, "new", "make the checks pass", "--check", CHECK, "--oracle", "conditions", *flags, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["goalId"]


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_converged_goal_is_announced_once_and_its_iterations_never(project, notified, gc_home, tmp_path):
    project_log = tmp_path / "project.jsonl"
    (project / ".goal-convergence.toml").write_text(f"notify = {json.dumps(f'cat >> {project_log}')}\n")
    gid = new_goal(project)
    run = goal(project, "run", gid, "--maker-cmd", "sed -i 1d failures.txt")  # one fix an iteration: two of them
    assert run.returncode == 0, run.stdout + run.stderr
    assert goal(project, "run", gid).returncode == 0  # a second look at the ended goal
    [event] = lines(notified)
    assert {k: event[k] for k in ("event", "goalId", "objective", "state", "stopReason", "iterations", "triageId",
                                  "projectRoot", "source")} == {
        "event": "goal-ended", "goalId": gid, "objective": "make the checks pass", "state": "converged",
        "stopReason": "converged", "iterations": 2, "triageId": None, "projectRoot": str(project), "source": "user"}
    assert event["spent"]["dollars"] == 0 and event["at"].endswith("Z")
    assert lines(project_log) == [event] and lines(gc_home / "events.jsonl") == [event]


def test_each_escalation_is_announced_also_after_a_resume(project, notified):
    gid = new_goal(project, "--max-iterations", "1")
    assert goal(project, "run", gid, "--maker-cmd", "true").returncode == 4  # ceiling
    assert goal(project, "resume", gid, "--max-iterations", "2").returncode == 0
    assert goal(project, "run", gid, "--maker-cmd", "true").returncode == 4
    doc = json.loads(goal(project, "status", gid, "--json").stdout)
    events = lines(notified)
    assert [(e["state"], e["stopReason"], e["iterations"]) for e in events] == [("escalated", "ceiling", 1),
                                                                               ("escalated", "ceiling", 2)]
    assert events[1]["triageId"] == doc["escalation"]["triageId"] != events[0]["triageId"]


def test_abandon_is_announced_and_pause_is_not(project, notified):
    kept, dropped = new_goal(project), new_goal(project)
    assert goal(project, "pause", kept).returncode == 0
    assert goal(project, "abandon", dropped).returncode == 0
    [event] = lines(notified)
    assert (event["goalId"], event["state"], event["stopReason"]) == (dropped, "failed", "cancelled")


def test_announcing_the_same_end_again_does_nothing(make_goal, gc_home, notified):
    store = Store(gc_home)
    active = store.create(make_goal())
    assert notify.goal_ended(store, active) is None and not notified.exists()
    ended = store.create(make_goal(state="converged", stop_reason="converged"))
    first = notify.goal_ended(store, ended)  # as an iteration retried after a crash would
    assert first is not None and notify.goal_ended(store, ended) is None
    assert lines(notified) == [first]


@pytest.mark.parametrize("command, logged", [
    ("echo boom >&2; exit 3", "exited 3"),
    ("sleep 30", "timed out after 1s"),
])
def test_a_failing_notify_command_is_logged_and_changes_nothing(project, gc_home, command, logged):
    gc_home.mkdir(parents=True, exist_ok=True)
    (gc_home / "config.toml").write_text(f"notify = {json.dumps(command)}\n")
    gid = new_goal(project)
    started = time.monotonic()
    done = goal(project, "abandon", gid, "--json", env={"GOAL_CONVERGENCE_NOTIFY_TIMEOUT": "1"})
    assert done.returncode == 0 and time.monotonic() - started < 10, done.stderr
    assert json.loads(done.stdout)["state"] == "failed"
    assert json.loads(goal(project, "status", gid, "--json").stdout)["state"] == "failed"
    log = (gc_home / "logs" / "goal-convergence.log").read_text()
    assert logged in log and command in log and gid in log
    assert [e["goalId"] for e in lines(gc_home / "events.jsonl")] == [gid]


def test_a_broken_home_setting_is_logged_and_the_project_command_still_runs(project, gc_home, tmp_path):
    gc_home.mkdir(parents=True, exist_ok=True)
    (gc_home / "config.toml").write_text("notify = \n")
    project_log = tmp_path / "project.jsonl"
    (project / ".goal-convergence.toml").write_text(f"notify = {json.dumps(f'cat >> {project_log}')}\n")
    gid = new_goal(project)
    assert goal(project, "abandon", gid).returncode == 0
    assert [e["goalId"] for e in lines(project_log)] == [gid]
    assert "config.toml is not valid TOML" in (gc_home / "logs" / "goal-convergence.log").read_text()
