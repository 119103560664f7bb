"""A maker that edits its own goal or baseline under the home, on a real project with a real bug:
the next iteration escalates the goal as tampered, names what changed and puts the terms back; an
honest maker's goal converges and is never shown tampered."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from goal_convergence.goals import creation, specs
from goal_convergence.loop import engine, runner
from goal_convergence.models import EXIT_CODES, Goal, TriageItem
from goal_convergence.report import render, view
from goal_convergence.storage.store import Store
from tests.conftest import git

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"


@pytest.fixture(autouse=True)
def no_bytecode(monkeypatch):
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = tmp_path / "project"
    (repo / "tests").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "calc.py").write_text(BUGGY)
    (repo / "tests" / "test_calc.py").write_text(TEST)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "calc")
    return repo


def new(store: Store, project: Path) -> Goal:
    spec = specs.GoalSpec(objective="make the tests pass", project=project, test=PYTEST,
                          oracle_provider="conditions", max_iterations=5)
    return creation.new_goal(store, spec)


def edit_goal(store: Store, goal_id: str, change) -> None:
    path = store.path_for(Goal, goal_id)
    doc = json.loads(path.read_text(encoding="utf-8"))
    change(doc)
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")


def iterate(store: Store, goal_id: str) -> engine.Outcome:
    """A Stop: another process each time, as each Stop hook is."""
    return engine.run_iteration(Store(store.root), goal_id, engine.MakerReport(summary="done"))


def test_an_honest_maker_converges_and_is_never_tampered(store, project):
    goal = new(store, project)
    assert iterate(store, goal.goal_id).decision.action == "continue"
    (project / "calc.py").write_text(FIXED)
    outcome = iterate(store, goal.goal_id)
    assert outcome.goal.state == "converged" and outcome.goal.tampered is None
    assert Store(store.root).load(Goal, goal.goal_id).tampered is None


def test_a_maker_that_rewrites_the_judge_and_the_budget_is_escalated_as_tampered(store, project):
    goal = new(store, project)
    manifest = store.root / "baselines" / f"{goal.goal_id}.json"

    def cheat(doc):
        doc["stoppingConditions"][0]["command"] = "true"
        doc["budget"]["maxIterations"] = 500
        doc["oracle"]["provider"] = "command"
        doc["oracle"]["command"] = "echo converged"
    edit_goal(store, goal.goal_id, cheat)
    # The old, unkeyed contract hash recomputed over the edited terms, as the first round's cheat did.
    forged = {"objective": goal.objective, "conditions": [{"type": "test_pass", "command": "true"}],
              "testsMayChange": False, "protect": []}
    doc = json.loads(manifest.read_text())
    doc["contract"] = hashlib.sha256(json.dumps(forged, sort_keys=True).encode()).hexdigest()
    manifest.write_text(json.dumps(doc))

    outcome = iterate(store, goal.goal_id)
    assert outcome.decision.stop_reason == "tampered" and EXIT_CODES["tampered"] == 8
    after = outcome.goal
    assert (after.state, after.stop_reason, after.tampered) == ("escalated", "tampered", None)
    [issue] = after.history[-1].integrity.issues
    assert issue.kind == "goal-tampered"
    assert "stoppingConditions[0].command: " in issue.detail and "→ true" in issue.detail
    assert "budget.maxIterations: 5 → 500" in issue.detail and "oracle.provider: conditions → command" in issue.detail
    # The terms as the goal was made are back: a person's resume runs those.
    assert after.stopping_conditions[0].command == PYTEST and after.budget.max_iterations == 5
    assert after.oracle.provider == "conditions" and after.oracle.command is None
    item = Store(store.root).load(TriageItem, after.escalation.triage_id)
    assert any("sealed terms were restored" in r for r in item.reasons)
    assert item.stop_reason == "tampered" and item.integrity.issues[0].kind == "goal-tampered"
    assert "sealed terms were restored" in render.status(after)


def test_a_goal_file_edited_to_converged_does_not_end_the_run(store, project):
    goal = new(store, project)
    edit_goal(store, goal.goal_id, lambda d: d.update(state="converged", stopReason="converged"))
    shown = Store(store.root).load(Goal, goal.goal_id)
    assert "TAMPERED (the file says converged)" in render.status(shown)
    assert view.page(shown)["tampered"]
    result = runner._loop(Store(store.root), goal.goal_id, maker=None, edges=engine.Edges(), on_iteration=None,
                          on_progress=None)
    assert result.stop == "tampered" and result.exit_code == 8
    ledger = result.ledger()
    assert ledger["stop"] == "tampered" and not ledger["met"]
    assert ledger["evidence"][-1]["integrity"]["issues"][0]["kind"] == "goal-tampered"


def test_an_edited_baseline_manifest_escalates_as_tampered(store, project):
    goal = new(store, project)
    manifest = store.root / "baselines" / f"{goal.goal_id}.json"
    doc = json.loads(manifest.read_text())
    doc["outcomes"] = [None]  # forget the start census: deleted tests would go unseen
    manifest.write_text(json.dumps(doc))
    (project / "calc.py").write_text(FIXED)
    outcome = iterate(store, goal.goal_id)
    assert outcome.goal.state == "escalated" and outcome.decision.stop_reason == "tampered"
    issues = outcome.goal.history[-1].integrity.issues
    assert [i.subject for i in issues if i.kind == "goal-tampered"] == ["baseline manifest"]


def test_a_stripped_seal_escalates_as_tampered(store, project):
    goal = new(store, project)
    edit_goal(store, goal.goal_id, lambda d: d.pop("seal"))
    (project / "calc.py").write_text(FIXED)
    outcome = iterate(store, goal.goal_id)
    assert outcome.goal.stop_reason == "tampered" and "has no seal" in outcome.goal.escalation.detail
