"""The GitHub Action's steps in this process (`goal action ...`), for what needs no runner: reading the
inputs, the file commands' format, the plan from a heartbeat, the fan-in of ledgers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from goal_convergence.actions import envfiles, ledger
from goal_convergence.actions.fanout import split_budget
from goal_convergence.actions.inputs import Inputs
from goal_convergence.errors import InvalidInput
from tests.actionrunner import parse_file_commands
from tests.conftest import run_goal

CONFIG = """
[heartbeat]
checks = [{ type = "test_pass", command = "sh check.sh" }, { type = "lint_clean", command = "true" }]
oracle = "conditions"

[heartbeat.budget]
max_iterations = 2
max_dollars = 1.5
"""


@pytest.fixture
def github(tmp_path, monkeypatch) -> dict[str, Path]:
    """The runner's files for one step, and its temp folder."""
    files = {name: tmp_path / name.lower() for name in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ENV")}
    for name, path in files.items():
        path.write_text("")
        monkeypatch.setenv(name, str(path))
    monkeypatch.setenv("RUNNER_TEMP", str(tmp_path / "runner-temp"))
    return files


def test_an_output_with_newlines_cannot_set_another_output(github):
    envfiles.set_outputs({"stop": "converged\nmet=true\nGOAL_EOF_x", "met": "false"})
    assert parse_file_commands(github["GITHUB_OUTPUT"].read_text()) == {"stop": "converged\nmet=true\nGOAL_EOF_x",
                                                                          "met": "false"}


def test_the_goal_json_wins_over_the_inputs_beside_it():
    env = {"GOAL_INPUT_OBJECTIVE": "default", "GOAL_INPUT_MAX_ITERATIONS": "15", "GOAL_INPUT_TEST": "make test",
           "GOAL_INPUT_GOAL": json.dumps({"objective": "fix it", "max-iterations": 4, "checks": ["a", "b"],
                                          "tests-may-change": True})}
    argv = Inputs.from_env(env).argv()
    assert argv == ["fix it", "--test", "make test", "--max-iterations", "4", "--check", "a", "--check", "b",
                    "--tests-may-change"]


@pytest.mark.parametrize("goal, message", [
    ("{not json", "input goal is not JSON"),
    ('["a"]', "must be a JSON object"),
    ('{"objective": "x", "tset": "pytest"}', "unknown keys tset"),
])
def test_a_bad_goal_input_is_refused_with_what_to_give(goal, message):
    with pytest.raises(InvalidInput, match=message):
        Inputs.from_env({"GOAL_INPUT_GOAL": goal})


def test_a_switch_input_is_true_or_false():
    with pytest.raises(InvalidInput, match="input tests-may-change is 'yes'; give true or false"):
        Inputs.from_env({"GOAL_INPUT_OBJECTIVE": "x", "GOAL_INPUT_TESTS_MAY_CHANGE": "yes"}).argv()


def test_a_working_directory_inside_a_checkout_is_refused_since_a_goal_works_on_the_whole_checkout(git_repo):
    (git_repo / "app").mkdir()
    with pytest.raises(InvalidInput, match="working-directory app is a folder inside the git checkout"):
        Inputs({"working-directory": "app"}).project(git_repo)
    assert Inputs({"working-directory": "."}).project(git_repo) == git_repo.resolve()
    (git_repo / "app" / ".git").mkdir()  # a checkout of its own there (actions/checkout with path: app)
    assert Inputs({"working-directory": "app"}).project(git_repo) == (git_repo / "app").resolve()


def test_the_plan_from_a_heartbeat_carries_each_goal_and_rebuilds_it(git_repo, github, monkeypatch):
    (git_repo / ".goal-convergence.toml").write_text(CONFIG)
    (git_repo / "check.sh").write_text("echo 'FAILED test_x - assert 1 == 2'; exit 1\n")
    monkeypatch.setenv("GITHUB_WORKSPACE", str(git_repo))
    monkeypatch.setenv("GOAL_INPUT_HEARTBEAT", "true")

    done = run_goal(git_repo, "action", "plan")

    assert done.returncode == 0, done.stderr
    outputs = parse_file_commands(github["GITHUB_OUTPUT"].read_text())
    assert outputs["count"] == "1"
    [item] = json.loads(outputs["matrix"])
    assert item == {"objective": "heartbeat: make `sh check.sh` pass again", "test": "sh check.sh",
                    "max-iterations": 2, "max-duration": "1h", "max-dollars": 1.5, "oracle": "conditions",
                    "oracle-model": item["oracle-model"], "stuck-after": 3,
                    "name": "heartbeat: make `sh check.sh` pass again"}
    assert "FAILED test_x" in github["GITHUB_STEP_SUMMARY"].read_text()
    spec = Inputs.from_env({"GOAL_INPUT_GOAL": json.dumps(item)}).spec(git_repo)
    assert (spec.test, spec.max_iterations, spec.max_dollars, spec.max_duration, spec.oracle_provider) == (
        "sh check.sh", 2, 1.5, "1h", "conditions")


def test_the_plan_wants_goals_or_a_heartbeat(tmp_path, github, monkeypatch):
    done = run_goal(tmp_path, "action", "plan")
    assert done.returncode == 65 and "either the input goals" in done.stderr
    monkeypatch.setenv("GOAL_INPUT_GOALS", '[{"test": "pytest"}]')
    done = run_goal(tmp_path, "action", "plan")
    assert done.returncode == 65 and "goal 0 of input goals has no objective" in done.stderr


def test_the_fan_in_reads_every_ledger_and_keeps_each_row_in_its_cell(tmp_path, github):
    for n, (met, objective) in enumerate([(True, "fix | the pipe\nand newline"), (False, "give up")]):
        folder = tmp_path / "ledgers" / f"goal-0000000{n}"
        folder.mkdir(parents=True)
        (folder / ledger.LEDGER_FILE).write_text(json.dumps({
            "goalId": f"goal-0000000{n}", "met": met, "stop": "converged" if met else "stuck", "turns": n + 1,
            "totalCostUsd": 0.25, "objective": objective}))

    done = run_goal(tmp_path, "action", "summary", str(tmp_path / "ledgers"))

    assert done.returncode == 0, done.stderr
    summary = github["GITHUB_STEP_SUMMARY"].read_text()
    assert "| ✅ | `goal-00000000` | fix \\| the pipe and newline | converged | 1 | $0.25 |" in summary
    assert "| ❌ | `goal-00000001` | give up | stuck | 2 | $0.25 |" in summary
    assert "Total spent: $0.50." in summary
    assert parse_file_commands(github["GITHUB_OUTPUT"].read_text()) == {
        "count": "2", "met-count": "1", "met": "false", "total-cost-usd": "0.5"}


def test_the_fleets_max_dollars_is_a_total_split_over_the_goals_that_name_no_budget():
    goals = [{"objective": "a"}, {"objective": "b", "max-dollars": "2"}, {"objective": "c", "max-dollars": 0}]
    assert [g["max-dollars"] for g in split_budget(goals, 10)] == [4.0, 2.0, 4.0]
    assert [g["max-dollars"] for g in split_budget(goals, 0)] == [0.0, 2.0, 0.0]  # no fleet total: no limit
    assert [g["max-dollars"] for g in split_budget([{}, {}, {}], 10)] == [3.33, 3.33, 3.33]  # never over the total
    assert [g["max-dollars"] for g in split_budget([{}, {}, {}], 0.3)] == [0.1, 0.1, 0.1]


@pytest.mark.parametrize("goals, total, message", [
    ([{"max-dollars": 6}, {"max-dollars": 5}], 10, r"add up to \$11.00, over the fleet's max-dollars \$10.00"),
    ([{"max-dollars": 10}, {}], 10, "leaves .* for the 1 goal"),
    ([{"max-dollars": "lots"}], 10, "max-dollars of goal 0 is 'lots'"),
])
def test_a_budget_the_fleet_cannot_split_is_refused_with_what_to_change(goals, total, message):
    with pytest.raises(InvalidInput, match=message):
        split_budget(goals, total)


def test_the_plan_splits_the_fleets_budget_and_says_so(tmp_path, github, monkeypatch):
    monkeypatch.setenv("GOAL_INPUT_GOALS", json.dumps([{"objective": "a"}, {"objective": "b", "max-dollars": 1}]))
    monkeypatch.setenv("GOAL_INPUT_MAX_DOLLARS", "$5")

    done = run_goal(tmp_path, "action", "plan")

    assert done.returncode == 0, done.stderr
    outputs = parse_file_commands(github["GITHUB_OUTPUT"].read_text())
    assert [g["max-dollars"] for g in json.loads(outputs["matrix"])] == [4.0, 1.0]
    assert re.fullmatch(r"fleet-[0-9a-f]{8}", outputs["fleet"])  # its goals' artifacts are named after it
    summary = github["GITHUB_STEP_SUMMARY"].read_text()
    assert "- a (up to $4.00)\n- b (up to $1.00)" in summary and "Fleet budget: $5.00 (max-dollars)" in summary
    monkeypatch.setenv("GOAL_INPUT_MAX_DOLLARS", "0.5")
    done = run_goal(tmp_path, "action", "plan")
    assert done.returncode == 65 and "over the fleet's max-dollars $0.50;" in done.stderr


def test_the_fan_in_states_each_goals_budget_and_the_fleets(tmp_path, github, monkeypatch):
    folder = tmp_path / "ledgers" / "goal-00000000"
    folder.mkdir(parents=True)
    (folder / ledger.LEDGER_FILE).write_text(json.dumps({
        "goalId": "goal-00000000", "met": True, "stop": "converged", "turns": 1, "totalCostUsd": 1.5,
        "maxDollars": 4.0, "objective": "a"}))
    monkeypatch.setenv("GOAL_INPUT_MAX_DOLLARS", "10")

    assert run_goal(tmp_path, "action", "summary", str(tmp_path / "ledgers")).returncode == 0
    summary = github["GITHUB_STEP_SUMMARY"].read_text()
    assert "| converged | 1 | $1.50 of $4.00 |" in summary
    assert "Total spent: $1.50 of the fleet's $10.00 (max-dollars, split over its goals)." in summary


def test_a_fan_in_with_no_ledger_says_so(tmp_path, github):
    # No goal job ran (the plan found nothing): download-artifact made no folder at all.
    assert run_goal(tmp_path, "action", "summary", str(tmp_path / "ledgers")).returncode == 0
    assert "No goal ran: no ledger.json was found under" in github["GITHUB_STEP_SUMMARY"].read_text()
    assert parse_file_commands(github["GITHUB_OUTPUT"].read_text())["met"] == "false"
