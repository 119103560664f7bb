"""`goal heartbeat` in real git repos: real checks, real goal and triage files; `goal` runs in this process
(tests.conftest.run_goal) except where two heartbeats race, as real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from goal_convergence.agents.claude_code.slash import run_command
from goal_convergence.loop.heartbeat import beat
from goal_convergence.models import Goal
from goal_convergence.storage.store import Store
from tests.conftest import run_goal

GOAL = [sys.executable, "-m", "goal_convergence"]
# The check reads failures.txt through a script: a file the command line named would be check-defining,
# and a maker that edits one is blocked by the integrity guard (tests/test_integrity.py).
CHECK = "sh check.sh"
CONFIG = f"""
[heartbeat]
checks = [{{ type = "test_pass", command = {json.dumps(CHECK)} }}]
oracle = "conditions"

[heartbeat.budget]
max_iterations = 2
"""


@pytest.fixture
def project(git_repo: Path) -> Path:
    (git_repo / ".goal-convergence.toml").write_text(CONFIG)
    (git_repo / "check.sh").write_text("if [ -s failures.txt ]; then cat failures.txt; exit 1; fi\n")
    (git_repo / "failures.txt").write_text("FAILED tests/test_a.py::test_a - AssertionError: 1 != 2\n")
    return git_repo


goal = run_goal


def beat_json(project: Path, *args: str, code: int = 0) -> dict:
    done = goal(project, "heartbeat", *args, "--json")
    assert done.returncode == code, done.stdout + done.stderr
    return json.loads(done.stdout)


def docs(home: Path, folder: str = "goals") -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((home / folder).glob("*-*.json"))]


def test_the_same_failure_twice_makes_one_goal_and_a_new_failure_a_second(project, gc_home):
    first = goal(project, "heartbeat")
    assert first.returncode == 0, first.stderr
    [doc] = docs(gc_home)
    assert f"new goal {doc['goalId']}" in first.stdout and "test_a" in first.stdout
    assert doc["source"] == "heartbeat" and doc["state"] == "active"
    assert doc["objective"] == f"heartbeat: make `{CHECK}` pass again"
    assert [(c["type"], c["command"]) for c in doc["stoppingConditions"]] == [("test_pass", CHECK)]
    assert doc["oracle"]["provider"] == "conditions" and doc["budget"]["maxIterations"] == 2
    assert doc["heartbeat"]["count"] == 1

    again = goal(project, "heartbeat")
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")  # cron: nothing new, nothing said
    [seen] = docs(gc_home)
    assert seen["heartbeat"]["count"] == 2 and seen["heartbeat"]["lastSeen"] >= doc["heartbeat"]["lastSeen"]
    assert seen["heartbeat"]["fingerprint"] == doc["heartbeat"]["fingerprint"]

    (project / "failures.txt").write_text("FAILED tests/test_b.py::test_b - KeyError: 'x'\n")
    report = beat_json(project)
    [finding] = report["findings"]
    assert finding["outcome"] == "created" and finding["id"] != doc["goalId"]
    assert sorted(d["heartbeat"]["count"] for d in docs(gc_home)) == [1, 2]


def test_nothing_failing_is_quiet_and_json_still_reports(project):
    (project / "failures.txt").write_text("")
    done = goal(project, "heartbeat")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    report = beat_json(project)
    assert (report["checks"], report["failing"], report["findings"]) == (1, 0, [])


def test_at_most_n_new_goals_per_project_per_hour(project, gc_home):
    checks = ", ".join(f'{{ type = "custom_command", command = "echo FAILED check {i}; exit 1" }}' for i in range(4))
    (project / ".goal-convergence.toml").write_text(f"[heartbeat]\nmax_new_per_hour = 2\nchecks = [{checks}]\n")
    first = goal(project, "heartbeat")
    assert first.returncode == 0 and first.stdout.count("skipped") == 2, first.stdout + first.stderr
    assert len(docs(gc_home)) == 2
    report = beat_json(project)
    assert [f["outcome"] for f in report["findings"]] == ["updated", "updated", "skipped", "skipped"]
    assert len(docs(gc_home)) == 2
    # an hour on, the limit has room again for the two failures it skipped
    later = beat(Store(gc_home), project, now=datetime.now(UTC) + timedelta(minutes=61))
    assert [f.outcome for f in later.findings] == ["updated", "updated", "created", "created"]
    assert len(docs(gc_home)) == 4


def test_run_converges_a_new_goal_and_a_failure_that_comes_back_is_new_again(project, gc_home):
    report = beat_json(project, "--run", "--maker-cmd", ": > failures.txt")
    [run] = report["runs"]
    assert (run["stop"], run["exitCode"], run["goalId"]) == ("converged", 0, report["findings"][0]["id"])
    [doc] = docs(gc_home)
    assert doc["state"] == "converged" and doc["source"] == "heartbeat"

    (project / "failures.txt").write_text("FAILED tests/test_a.py::test_a - AssertionError: 1 != 2\n")
    assert beat_json(project)["findings"][0]["outcome"] == "created"  # a regression: its old goal converged


def test_an_escalated_fingerprint_is_known_and_not_reopened(project, gc_home):
    report = beat_json(project, "--run", "--maker-cmd", "true", code=4)  # ceiling: `goal run`'s exit code
    assert report["runs"][0]["stop"] == "ceiling" and report["exitCode"] == 4
    [escalated] = docs(gc_home)
    for mode in ("goal", "triage"):
        [finding] = beat_json(project, "--mode", mode)["findings"]
        assert (finding["outcome"], finding["id"], finding["state"]) == ("known", escalated["goalId"], "escalated")
    [doc] = docs(gc_home)
    assert doc["state"] == "escalated" and doc["heartbeat"] == escalated["heartbeat"]
    assert [i["source"] for i in docs(gc_home, "triage")] == ["escalation"]


def test_triage_mode_makes_one_item_and_dedups_it(project, gc_home):
    [created] = beat_json(project, "--mode", "triage")["findings"]
    assert created["outcome"] == "created" and created["kind"] == "triage" and docs(gc_home) == []
    [updated] = beat_json(project, "--mode", "triage")["findings"]
    assert (updated["outcome"], updated["id"], updated["count"]) == ("updated", created["id"], 2)
    [item] = json.loads(goal(project, "triage", "list", "--json").stdout)
    assert (item["triageId"], item["source"], item["count"], item["goalId"]) == (created["id"], "heartbeat", 2, None)
    assert item["failingConditions"] == [{"type": "test_pass", "command": CHECK,
                                          "firstFailure": "FAILED tests/test_a.py::test_a - AssertionError: 1 != 2"}]
    assert goal(project, "triage", "dismiss", created["id"]).returncode == 0
    [dismissed] = beat_json(project, "--mode", "triage")["findings"]
    assert (dismissed["outcome"], dismissed["id"]) == ("known", created["id"])


def test_settings_come_from_goal_convergence_toml_else_pyproject(git_repo):
    (git_repo / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.goal-convergence.heartbeat]\nmode = "triage"\n'
        'checks = [{ type = "custom_command", command = "echo FAILED from pyproject; exit 1" }]\n')
    report = beat_json(git_repo)
    assert report["mode"] == "triage" and report["findings"][0]["command"] == "echo FAILED from pyproject; exit 1"
    (git_repo / ".goal-convergence.toml").write_text(
        '[heartbeat]\nchecks = [{ type = "lint_clean", command = "echo E501 from toml; exit 3" }]\n')
    report = beat_json(git_repo)
    assert report["mode"] == "goal" and [(f["type"], f["command"]) for f in report["findings"]] == \
        [("lint_clean", "echo E501 from toml; exit 3")]


@pytest.mark.parametrize("text, says", [
    ("[heartbeat]\nmax_new_per_hours = 3\n", "heartbeat.max_new_per_hours"),
    ("[heartbeat]\nchecks = [{ type = \"coverage_threshold\", command = \"c\" }]\n", "threshold = PCT"),
    ("[heartbeat]\nmode = \"loud\"\n", "heartbeat.mode"),
    ("[heartbeat\n", "is not valid TOML"),
])
def test_a_bad_setting_is_refused_naming_the_file_and_the_key(git_repo, text, says):
    (git_repo / ".goal-convergence.toml").write_text(text)
    done = goal(git_repo, "heartbeat")
    assert done.returncode == 65 and ".goal-convergence.toml" in done.stderr and says in done.stderr, done.stderr


def test_without_settings_the_inferred_checks_run(git_repo, gc_home):
    (git_repo / "Makefile").write_text("test:\n\t@echo 'FAILED test_x - boom'; exit 1\n")
    [finding] = beat_json(git_repo)["findings"]
    assert (finding["type"], finding["command"], finding["outcome"]) == ("test_pass", "make test", "created")
    (git_repo / "Makefile").unlink()
    done = goal(git_repo, "heartbeat")
    assert done.returncode == 65 and "no checks to run" in done.stderr


def test_two_heartbeats_at_once_make_one_goal(project, gc_home):
    (project / ".goal-convergence.toml").write_text(CONFIG.replace("if [", "sleep 0.5; if ["))
    procs = [subprocess.Popen([*GOAL, "heartbeat"], cwd=project, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=60)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert len(docs(gc_home)) == 1 and docs(gc_home)[0]["heartbeat"]["count"] == 2
    assert sorted(bool(o) for o in outputs) == [False, True]  # one made it, the other was quiet


@pytest.mark.parametrize("args, says", [
    (["--run", "--mode", "triage"], "--mode triage makes triage items"),
    (["--maker-cmd", "true"], "add --run"),
])
def test_flags_that_do_not_go_together_are_a_usage_error(project, gc_home, args, says):
    done = goal(project, "heartbeat", *args)
    assert done.returncode == 64 and says in done.stderr and docs(gc_home) == []


def test_the_slash_command_runs_it_for_the_current_project_without_a_shell(project, gc_home):
    (project / "sub").mkdir()
    reply = run_command("heartbeat", "--json", session_id="s-1", cwd=str(project / "sub"))
    assert reply.text.startswith("Output of `goal heartbeat --json` (exit 0)")
    [doc] = docs(gc_home)
    assert doc["projectRoot"] == str(project) and doc["goalId"] in reply.text
    quiet = run_command("heartbeat", "", session_id="s-1", cwd=str(project))
    assert "(exit 0)" in quiet.text and "nothing new" in quiet.text
    hostile = run_command("heartbeat", "--mode $(touch PWNED) `touch PWNED2`", session_id="s-1", cwd=str(project))
    assert "(exit 64)" in hostile.text and not list(project.glob("PWNED*")) and not list(Path.cwd().glob("PWNED*"))


def test_a_goal_made_from_a_heartbeat_item_is_what_the_next_heartbeat_finds(project, gc_home):
    [item] = beat_json(project, "--mode", "triage")["findings"]
    acted = goal(project, "triage", "act", item["id"], "--json")
    assert acted.returncode == 0, acted.stderr
    made = json.loads(acted.stdout)
    assert made["source"] == "triage" and [c["command"] for c in made["stoppingConditions"]] == [CHECK]
    [finding] = beat_json(project)["findings"]
    assert (finding["outcome"], finding["id"]) == ("updated", made["goalId"])
    assert [d["goalId"] for d in docs(gc_home)] == [made["goalId"]]


def test_the_tests_may_change_setting_reaches_the_goals_it_makes(project):
    (project / ".goal-convergence.toml").write_text(CONFIG.replace('oracle = "conditions"',
                                                                   'oracle = "conditions"\ntests_may_change = true'))
    report = beat(Store(), project)
    [finding] = report.findings
    goal = Store().load(Goal, finding.tracked.item_id)
    assert goal.tests_may_change and goal.baseline.census == [None]  # `sh check.sh` is no test runner


def test_the_cron_pair_works_the_nightly_run_works_on_the_goal_an_hourly_heartbeat_made(project, gc_home):
    [made] = beat_json(project)["findings"]  # the hourly plain heartbeat
    assert made["outcome"] == "created"
    nightly = beat_json(project, "--run", "--maker-cmd", ": > failures.txt")
    assert [f["outcome"] for f in nightly["findings"]] == ["updated"]
    assert [(r["goalId"], r["stop"]) for r in nightly["runs"]] == [(made["id"], "converged")]
    [doc] = docs(gc_home)
    assert doc["state"] == "converged"


def test_run_leaves_alone_a_heartbeat_goal_a_session_holds(project, gc_home):
    [made] = beat_json(project)["findings"]
    assert goal(project, "resume", made["id"], "--session", "s-1").returncode == 0
    report = beat_json(project, "--run", "--maker-cmd", ": > failures.txt")
    assert report["runs"] == [] and docs(gc_home)[0]["state"] == "active"
    assert (project / "failures.txt").read_text()  # no maker ran


@pytest.fixture
def no_oracle(project, monkeypatch) -> Path:
    """Heartbeat settings that leave the oracle to `auto`, on a machine with no API key and no Claude Code."""
    monkeypatch.delenv("CLAUDE_BIN", raising=False)
    monkeypatch.setenv("PATH", os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep)
                                               if not (Path(d) / "claude").exists()))
    (project / ".goal-convergence.toml").write_text(CONFIG.replace('oracle = "conditions"\n', ""))
    return project


def test_with_no_oracle_run_says_what_to_set_and_the_goal_runs_once_it_is_set(no_oracle, gc_home):
    for _ in range(2):  # the goal made by the first is not skipped silently by the second
        done = goal(no_oracle, "heartbeat", "--run", "--maker-cmd", ": > failures.txt")
        assert done.returncode == 69, done.stdout + done.stderr
        assert 'oracle = "conditions"' in done.stdout and "--oracle conditions" in done.stdout
        assert "The open heartbeat goal here waits for the next `goal heartbeat --run`" in done.stdout
    [doc] = docs(gc_home)
    assert (doc["state"], doc["spent"]["iterations"], doc["oracle"]["provider"]) == ("active", 0, "auto")
    assert (no_oracle / "failures.txt").read_text()  # nothing was spent: the maker never ran

    (no_oracle / ".goal-convergence.toml").write_text(CONFIG)
    report = beat_json(no_oracle, "--run", "--maker-cmd", ": > failures.txt")
    assert [(r["goalId"], r["stop"]) for r in report["runs"]] == [(doc["goalId"], "converged")]
    [done_doc] = docs(gc_home)
    assert (done_doc["state"], done_doc["oracle"]["provider"]) == ("converged", "conditions")


def test_the_oracle_flag_judges_the_heartbeat_goals(no_oracle, gc_home):
    report = beat_json(no_oracle, "--run", "--oracle", "conditions", "--maker-cmd", ": > failures.txt")
    assert [r["stop"] for r in report["runs"]] == ["converged"] and report["blocked"] is None
    [doc] = docs(gc_home)
    assert doc["oracle"]["provider"] == "conditions"
