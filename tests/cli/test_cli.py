"""The `goal` command: real files, exit codes and --json shapes. Most calls run `main` in this process
(tests.conftest.run_goal); the console script itself, through real processes, where the boundary is the point."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

from goal_convergence.cli.app import cli
from goal_convergence.models import schema
from tests.conftest import run_goal

GOAL = str(Path(sys.executable).parent / "goal")  # the console script of the venv running the tests
SUMMARY_KEYS = {"goalId", "objective", "state", "stopReason", "sessionId", "projectRoot", "iterations",
                "maxIterations", "dollars", "lastHint", "triageId", "createdAt"}


goal = run_goal


def goals_at_once(cwd: Path, runs: list[list[str]]) -> list[subprocess.CompletedProcess]:
    """Independent invocations side by side: each pays the interpreter's start-up, not the others'."""
    procs = [subprocess.Popen([GOAL, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              stdin=subprocess.DEVNULL) for args in runs]
    outputs = [p.communicate(timeout=60) for p in procs]
    return [subprocess.CompletedProcess(args, p.returncode, *out) for args, p, out in zip(runs, procs, outputs)]


def ok(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    done = goal(cwd, *args)
    assert done.returncode == 0, done.stderr
    return done


def new(cwd: Path, objective: str = "make all tests pass", *flags: str) -> dict:
    # `goal new` runs the conditions once for the start census: a test command that costs nothing
    return json.loads(ok(cwd, "new", objective, "--test", "true", *flags, "--json").stdout)


def test_the_console_script_answers_and_exits_through_a_real_process(tmp_path):
    runs = [["--version"], ["frobnicate"], ["status", "goal-zzzzzzzz"], ["pause", "goal-../../etc"]]
    real = goals_at_once(tmp_path, runs)
    # what the other tests see in this process is what the user sees
    assert [(d.returncode, d.stdout, d.stderr) for d in real] == [
        (d.returncode, d.stdout, d.stderr) for d in (goal(tmp_path, *args) for args in runs)]
    version, usage, missing, _ = real
    assert (version.returncode, version.stdout.strip()) == (0, "goal, version 0.1.0"), version.stderr
    assert usage.returncode == 64 and "Usage:" in usage.stderr and "No such command 'frobnicate'" in usage.stderr
    assert missing.returncode == 66 and "no goal goal-zzzzzzzz" in missing.stderr


def test_help_version_and_usage_errors(tmp_path):
    assert "Commands:" in ok(tmp_path, "--help").stdout
    assert "0.1.0" in ok(tmp_path, "--version").stdout
    for args in [["frobnicate"], ["new"], ["list", "--bogus"], ["new", "x", "--max-iterations", "-1"],
                 ["new", "x", "--coverage", "lots"]]:
        done = goal(tmp_path, *args)
        assert done.returncode == 64 and "Usage:" in done.stderr and done.stderr.rstrip().splitlines()[-1].startswith(
            "Error: "), args


def test_every_command_has_help_text():
    def walk(group: click.Group, prefix: str):
        for name, command in group.commands.items():
            yield f"{prefix}{name}", command
            if isinstance(command, click.Group):
                yield from walk(command, f"{prefix}{name} ")

    for name, command in walk(cli, ""):
        assert (command.help or "").strip(), f"`goal {name}` has no help text"
    for name in ("new", "list", "status", "pause", "resume", "abandon"):
        assert any(p.name == "json_out" for p in cli.commands[name].params), f"`goal {name}` has no --json"


def test_a_goal_from_start_to_abandon(git_repo):
    created = new(git_repo)
    gid = created["goalId"]
    assert schema.errors(created, "goal") == []
    assert (created["state"], created["budget"], created["oracle"]["model"]) == (
        "active", {"maxIterations": 15, "maxDuration": "2h", "maxDollars": 10.0, "maxTokens": None},
        "claude-haiku-5-5")

    (git_repo / "src").mkdir()  # anywhere in the project finds its goal
    assert json.loads(ok(git_repo / "src", "status", "--json").stdout) == created
    assert f"{gid}: make all tests pass" in ok(git_repo, "status").stdout

    [summary] = json.loads(ok(git_repo, "list", "--json").stdout)
    assert set(summary) == SUMMARY_KEYS and summary["goalId"] == gid and summary["iterations"] == 0

    assert f"paused {gid}" in ok(git_repo, "pause").stdout
    again = goal(git_repo, "pause", gid)
    assert again.returncode == 65 and f"cannot pause goal {gid}: it is paused" in again.stderr
    assert json.loads(ok(git_repo, "resume", "--json").stdout)["state"] == "active"
    assert json.loads(ok(git_repo, "abandon", "--json").stdout)["stopReason"] == "cancelled"
    ended = goal(git_repo, "abandon", gid)
    assert ended.returncode == 65 and f"cannot abandon goal {gid}: it is failed" in ended.stderr

    ended = ok(git_repo, "status").stdout  # the goal that ended, said to be no open one
    assert ended.startswith(f"(no open goal in {git_repo}; showing the most recent one, {gid}, failed (cancelled)")
    assert ok(git_repo, "list").stdout.startswith(f"no open goals; the most recent, {gid}, failed (cancelled)")
    assert [s["state"] for s in json.loads(ok(git_repo, "list", "--all", "--json").stdout)] == ["failed"]


def test_the_objective_reaches_the_goal_untouched(tmp_path):
    objective = "don't break the API; $(rm -rf ~) `whoami` \"quoted\"\nsecond line"
    assert new(tmp_path, objective)["objective"] == objective


BAD_INPUT = [
    (["new", "make all tests pass"], "--test CMD, --lint CMD, --build CMD, --coverage PCT"),
    (["new", "x", "--test", "t", "--max-iterations", "0", "--max-duration", "0s", "--max-dollars", "0"],
     "at least one budget limit"),
    (["new", "x", "--test", "t", "--maker-model", "claude-haiku-5-5-20251001"], "is the maker's model"),
    (["new", "x", "--test", "t", "--max-duration", "5x"], "'5x' is not a duration"),
    (["status", "../x"], "'../x' is not a valid goal id"),
    (["pause", "goal-../../etc"], "not a valid goal id"),
]


def test_bad_input_exits_65(tmp_path):
    for args, message in BAD_INPUT:
        done = goal(tmp_path, *args)
        assert (done.returncode, done.stdout) == (65, ""), (done.args, done.stderr)
        assert message in done.stderr and done.stderr.startswith("Error: "), (done.args, done.stderr)


def test_a_missing_goal_exits_66(tmp_path):
    done = goal(tmp_path, "status", "goal-zzzzzzzz")
    assert done.returncode == 66 and "no goal goal-zzzzzzzz" in done.stderr


def test_several_open_goals_without_an_id_exit_64_and_list_them(tmp_path):
    ids = [new(tmp_path, f"goal {i}")["goalId"] for i in range(2)]
    done = goal(tmp_path, "status")
    assert done.returncode == 64 and all(gid in done.stderr for gid in ids)


@pytest.mark.parametrize("how", ["truncated", "schema-invalid"])
def test_a_broken_goal_file_is_quarantined_and_reported_once(tmp_path, gc_home, how):
    broken, good = new(tmp_path, "one")["goalId"], new(tmp_path, "two")["goalId"]
    path = gc_home / "goals" / f"{broken}.json"
    text = path.read_text()
    path.write_text(text[: len(text) // 2] if how == "truncated" else text.replace('"active"', '"running"'))

    first = ok(tmp_path, "list")
    table, _, quarantined = first.stdout.partition("\n\nquarantined")
    assert good in table and broken not in table and broken in quarantined  # listed apart until dismissed
    [warning] = first.stderr.splitlines()
    assert warning.startswith("warning: quarantined ") and str(path) in warning
    assert ("not valid JSON" if how == "truncated" else "running") in warning
    second = ok(tmp_path, "list")
    assert second.stderr == "" and good in second.stdout
    [kept] = (gc_home / "quarantine").glob(f"{broken}.json.*[0-9]")
    assert kept.read_text() != "" and broken in kept.name


def test_check_runs_the_conditions_now_and_exits_by_the_result(git_repo):
    made = json.loads(ok(git_repo, "new", "make it build", "--build", "true", "--check", "echo 'boom: 42 is wrong'; exit 3",
                         "--json").stdout)
    failing = goal(git_repo, "check", made["goalId"], "--json")
    assert failing.returncode == 1, failing.stderr
    evidence = json.loads(failing.stdout)
    assert [(e["type"], e["passed"], e["exitCode"]) for e in evidence] == [("build_pass", True, 0),
                                                                          ("custom_command", False, 3)]
    assert "boom: 42 is wrong" in evidence[1]["failureLines"]
    table = goal(git_repo, "check")  # no id: the open goal of this project
    assert table.returncode == 1 and "PASS" in table.stdout and "FAIL" in table.stdout
    ok(git_repo, "abandon", made["goalId"])
    green = json.loads(ok(git_repo, "new", "make it build", "--build", "true", "--json").stdout)
    assert goal(git_repo, "check", green["goalId"]).returncode == 0


def test_the_same_model_rule_suggests_a_different_model(tmp_path):
    for maker in ("claude-haiku-5-5", "claude-sonnet-5-5"):
        done = goal(tmp_path, "new", "x", "--test", "true", "--maker-model", maker, "--oracle-model", maker)
        assert done.returncode == 65 and "is the maker's model" in done.stderr
        suggested = done.stderr.split("(e.g. ")[1]
        assert maker not in suggested and "claude-" in suggested, done.stderr


def test_no_failure_of_any_command_uses_a_stop_reasons_exit_code(tmp_path):
    from goal_convergence.models import EXIT_CODES

    runs = {("frobnicate",): 64, ("triage", "act"): 64, ("triage", "frob"): 64, ("heartbeat", "--mode", "x"): 64,
            ("list", "--bogus"): 64, ("run", "--maker", "gpt"): 64, ("status", "goal-zzzzzzzz"): 66,
            ("triage", "show", "tri-zzzzzzzz"): 66, ("resume", "../x"): 65}
    for args, code in runs.items():
        done = goal(tmp_path, *args)
        assert done.returncode == code and code not in EXIT_CODES.values(), (args, done.returncode, done.stderr)


def test_checks_chosen_as_a_guard_are_named_with_how_to_measure_the_objective(git_repo):
    (git_repo / "Makefile").write_text("test:\n\ttrue\n")
    docs = ok(git_repo, "new", "make the docs nicer").stdout
    assert "`make test` was chosen as a guard" in docs and "does not measure the objective" in docs
    assert "--check CMD" in docs
    ok(git_repo, "abandon")
    tests = ok(git_repo, "new", "make all tests pass").stdout
    assert "make test" in tests and "chosen as a guard" not in tests
