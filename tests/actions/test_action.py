"""The composite action at the repository root, run step by step on this machine as a GitHub runner
would run it (tests/actionrunner.py): the package installed from the action's own copy, a goal that
converges and one that escalates, and what each leaves in the outputs, the job summary and the
artifact folder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from goal_convergence.system.index import GOAL_ID_RE
from tests.actionrunner import LocalRunner
from tests.conftest import REPO

CALC = "def add(a, b):\n    return a - b\n"
TEST = "from calc import add\n\nassert add(2, 3) == 5, f'add(2, 3) is {add(2, 3)}, not 5'\nprint('1 passed')\n"
FIX = "python3 -c \"import pathlib; p = pathlib.Path('calc.py'); p.write_text(p.read_text().replace('a - b', 'a + b'))\""


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def action_path(tmp_path_factory) -> Path:
    """The action as a runner checks it out: the repository's files, in a folder of their own (pip builds
    in the source tree, which must not be this worktree)."""
    folder = tmp_path_factory.mktemp("action")
    files = _git(REPO, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    for name in filter(None, files):
        source = REPO / name
        if source.is_file():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(source.read_bytes())
    return folder


@pytest.fixture
def workspace(tmp_path) -> Path:
    """A checkout with a bug and its test, on branch main."""
    ws = tmp_path / "workspace"
    ws.mkdir()
    (ws / "calc.py").write_text(CALC)
    (ws / "test_calc.py").write_text(TEST)
    _git(ws, "init", "-q", "-b", "main")
    _git(ws, "add", ".")
    _git(ws, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "start")
    return ws


@pytest.fixture(scope="module")
def runner_temp(tmp_path_factory) -> Path:
    """One RUNNER_TEMP for the module's runs: the second install finds the dependencies in the venv the first
    made, as a self-hosted runner keeping its temp folder would (a hosted one starts empty, which the first
    run of the module is)."""
    return tmp_path_factory.mktemp("runner-temp")


def _runner(action_path: Path, workspace: Path, temp: Path, **env: str) -> LocalRunner:
    return LocalRunner(action_path, workspace, temp, env=env)


GOAL = {"objective": "make add() add", "test": "python3 test_calc.py", "oracle": "conditions",
        "max-iterations": "3"}


@pytest.fixture
def origin(workspace, tmp_path) -> Path:
    """A remote for the checkout to push to (a bare repository standing in for GitHub)."""
    bare = tmp_path / "origin.git"
    _git(tmp_path, "init", "-q", "--bare", str(bare))
    _git(workspace, "remote", "add", "origin", str(bare))
    _git(workspace, "push", "-q", "origin", "main")
    return bare


@pytest.fixture
def fake_gh(tmp_path) -> tuple[Path, Path]:
    """`gh` on PATH that records its arguments and the body it was given, and answers with a pull request URL."""
    folder, record = tmp_path / "bin", tmp_path / "gh-calls.json"
    folder.mkdir()
    gh = folder / "gh"
    gh.write_text(f"""#!{sys.executable}
import json, os, sys
args = sys.argv[1:]
body = open(args[args.index("--body-file") + 1]).read() if "--body-file" in args else None
json.dump({{"args": args, "body": body, "token": os.environ.get("GH_TOKEN")}}, open({str(record)!r}, "w"))
print("https://github.com/octo/project/pull/7")
""")
    gh.chmod(0o755)
    return folder, record


def test_a_converging_goal_sets_the_outputs_the_summary_the_artifact_and_opens_a_pull_request(
        action_path, workspace, runner_temp, origin, fake_gh):
    path = f"{fake_gh[0]}{os.pathsep}{os.environ['PATH']}"
    run = _runner(action_path, workspace, runner_temp, PATH=path).run({**GOAL, "maker-cmd": FIX, "pull-request": "true"})

    assert run.failed is None, run.log()
    out = run.outputs
    assert (out["met"], out["stop"], out["exit-code"]) == ("true", "converged", "0"), run.log()
    assert GOAL_ID_RE.fullmatch(out["goal-id"])
    assert "a + b" in (workspace / "calc.py").read_text()
    # The goal lives in the runner's temp folder, never in the checkout a pull request is made from.
    assert Path(out["goal-file"]).is_relative_to(runner_temp)
    goal = json.loads(Path(out["goal-file"]).read_text())
    assert (goal["state"], goal["stopReason"]) == ("converged", "converged")
    assert f"### ✅ `{out['goal-id']}` converged" in run.summary
    assert "| test_pass | `python3 test_calc.py` | ✅ pass |" in run.summary
    assert "> make add() add" in run.summary
    upload = run.uses("actions/upload-artifact")
    assert upload.with_["name"] == out["goal-id"]
    kept = {p.name for p in Path(upload.with_["path"]).iterdir()}
    assert {f"{out['goal-id']}.json", "ledger.json", "ledger.md"} <= kept
    ledger = json.loads((Path(upload.with_["path"]) / "ledger.json").read_text())
    assert (ledger["met"], ledger["stop"], ledger["turns"], ledger["exitCode"]) == (True, "converged", 1, 0)
    branch = f"goal-convergence/{out['goal-id']}"
    assert (out["branch"], out["pull-request-url"]) == (branch, "https://github.com/octo/project/pull/7")
    assert _git(origin, "show", f"{branch}:calc.py") == "def add(a, b):\n    return a + b\n"
    assert _git(origin, "log", "-1", "--format=%an|%s", branch) == "github-actions[bot]|make add() add\n"
    assert _git(workspace, "status", "--porcelain") == ""  # the change is committed, and the goal file is not in it
    assert _git(origin, "show", "--name-only", "--format=", branch) == "calc.py\n"
    gh = json.loads(fake_gh[1].read_text())
    assert gh["args"][:8] == ["pr", "create", "--base", "main", "--head", branch, "--title", "make add() add"]
    assert gh["token"] == "local-token" and gh["body"].startswith(f"### ✅ `{out['goal-id']}` converged")


def test_an_escalating_goal_fails_the_job_with_its_stop_reason_and_keeps_its_ledger(action_path, workspace, runner_temp):
    objective = "make add() add, don't `break` it $(touch pwned); echo \"$HOME\"\nsecond line"
    run = _runner(action_path, workspace, runner_temp).run({**GOAL, "objective": objective, "maker-cmd": "true",
                                                            "max-iterations": "2"})

    out = run.outputs
    assert (out["met"], out["stop"], out["exit-code"]) == ("false", "ceiling", "4"), run.log()
    assert run.step("goal").exit_code == 0
    assert run.failed is not None and run.failed.name == "Fail unless the goal was met" and run.failed.exit_code == 4
    assert "::error title=goal not met::" in run.failed.log
    assert f"### ❌ `{out['goal-id']}` ceiling" in run.summary
    assert "❌ fail: " in run.summary and "add(2, 3) is -1, not 5" in run.summary
    assert "Escalated (ceiling)" in run.summary
    # The objective reached the goal as written: through the environment, never through a shell parse.
    assert json.loads(Path(out["goal-file"]).read_text())["objective"] == objective
    assert f"> {objective.replace(chr(10), ' ')}" in run.summary and not (workspace / "pwned").exists()
    assert "| 2 | 0/1 | stop: ceiling |" in run.summary
    kept = Path(run.uses("actions/upload-artifact").with_["path"])
    assert json.loads((kept / "ledger.json").read_text())["stop"] == "ceiling"


def test_a_fleet_plans_its_goals_runs_each_and_sums_them_up_in_one_summary(action_path, tmp_path, runner_temp):
    """goals.yml locally: the plan action's matrix, the action once an item (in a checkout of its own), and the
    summary action over the artifacts as download-artifact lays them out (one folder each)."""
    goals = [{"objective": "make add() add", "test": "python3 test_calc.py", "maker-cmd": FIX},
             {"objective": "give up on add()", "test": "python3 test_calc.py", "maker-cmd": "true",
              "max-iterations": 1, "pull-request": True}]
    plan = LocalRunner(action_path / "plan", tmp_path, runner_temp).run({"goals": json.dumps(goals)})
    assert plan.failed is None, plan.log()
    matrix = json.loads(plan.outputs["matrix"])
    assert plan.outputs["count"] == "2" and [m["name"] for m in matrix] == ["make add() add", "give up on add()"]
    downloaded = tmp_path / "ledgers"
    runs = []
    for n, item in enumerate(matrix):
        ws = tmp_path / f"checkout-{n}"
        ws.mkdir()
        (ws / "calc.py").write_text(CALC)
        (ws / "test_calc.py").write_text(TEST)
        run = _runner(action_path, ws, runner_temp).run({"goal": json.dumps(item), "oracle": "conditions",
                                                          "fail-unless-met": "false",
                                                          "artifact-prefix": f"{plan.outputs['fleet']}-"})
        assert run.failed is None, run.log()
        upload = run.uses("actions/upload-artifact").with_
        assert upload["name"] == f"{plan.outputs['fleet']}-{run.outputs['goal-id']}" == run.outputs["artifact-name"]
        shutil.copytree(upload["path"], downloaded / upload["name"])
        runs.append(run)
    assert [r.outputs["stop"] for r in runs] == ["converged", "ceiling"]
    assert "did not converge" in runs[1].step("pr").log and runs[1].outputs["pull-request-url"] == ""
    assert runs[0].step("pr").log == ""  # not asked for

    summary = LocalRunner(action_path / "summary", tmp_path, runner_temp).run({"path": str(downloaded)})
    assert summary.failed is None, summary.log()
    assert (summary.outputs["count"], summary.outputs["met-count"], summary.outputs["met"]) == ("2", "1", "false")
    assert "### goal-convergence: 1 of 2 goals met" in summary.summary
    for run, mark in zip(runs, ("✅", "❌"), strict=True):
        assert f"| {mark} | `{run.outputs['goal-id']}` |" in summary.summary


def test_a_bad_input_fails_the_run_step_naming_the_flag(action_path, workspace, runner_temp):
    run = _runner(action_path, workspace, runner_temp).run({**GOAL, "maker-cmd": "true", "max-dollars": "lots"})

    assert run.failed is run.step("goal") and run.failed.exit_code == 65
    assert "--max-dollars" in run.failed.log and "'lots'" in run.failed.log
    assert run.outputs["goal-id"] == "" and run.outputs["met"] == ""
