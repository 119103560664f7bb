"""`goal triage act ID accept`, end to end: a maker special-cases the failing test under the conditions
judge, the green run stops as flagged with its finding, a person sends it back once, then accepts it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.cli.test_run import goal, load, maker_script
from tests.conftest import git

PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"
CALC = "def answer(x):\n    return x * 2\n"
TEST = "from calc import answer\n\n\ndef test_answer():\n    assert answer(7) == 42\n"
CHEAT = """
import pathlib
pathlib.Path("calc.py").write_text("def answer(x):\\n    if x == 7:\\n        return 42\\n    return x * 2\\n")
print("done: answer(7) is 42 now")
"""


@pytest.fixture
def project(git_repo: Path, monkeypatch) -> Path:
    (git_repo / "calc.py").write_text(CALC)
    (git_repo / "tests").mkdir()
    (git_repo / "tests" / "test_calc.py").write_text(TEST)
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-qm", "calc")
    monkeypatch.chdir(git_repo)
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    return git_repo


def test_a_flagged_green_run_waits_for_a_person_who_can_send_it_back_or_accept_it(project, tmp_path):
    made = goal("new", "answer(7) must be 42", "--test", PYTEST, "--oracle", "conditions", "--json")
    assert made.returncode == 0, made.stderr
    gid = json.loads(made.stdout)["goalId"]
    maker = maker_script(tmp_path, CHEAT)
    run = goal("run", gid, "--maker-cmd", maker)
    assert run.returncode == 9, run.stdout + run.stderr
    doc = load(gid)
    assert (doc["state"], doc["stopReason"]) == ("escalated", "flagged")
    assert "calc.py:2" in doc["history"][-1]["decision"]["hint"]
    [item] = json.loads(goal("triage", "list", "--json").stdout)
    shown = goal("triage", "show", item["triageId"]).stdout
    assert "finding: special-casing: calc.py:2" in shown and f"goal triage act {item['triageId']} accept" in shown

    # Sent back: the maker hears the finding; the same cheat is flagged again.
    assert goal("triage", "act", item["triageId"]).returncode == 0
    assert goal("run", gid, "--maker-cmd", maker).returncode == 9
    [item] = json.loads(goal("triage", "list", "--json").stdout)

    accepted = goal("triage", "act", item["triageId"], "accept", "--json")
    assert accepted.returncode == 0, accepted.stderr
    doc = json.loads(accepted.stdout)
    assert (doc["state"], doc["stopReason"]) == ("converged", "converged") and doc["acceptedAt"]
    assert "accepted by a person" in goal("status", gid).stdout
    assert json.loads(goal("triage", "list", "--json").stdout) == []


def test_only_a_flagged_goal_can_be_accepted(project, tmp_path):
    made = goal("new", "answer(7) must be 42", "--test", PYTEST, "--oracle", "conditions", "--max-iterations", "1",
                "--json")
    gid = json.loads(made.stdout)["goalId"]
    assert goal("run", gid, "--maker-cmd", "date +%s%N >> notes.txt").returncode == 4  # its ceiling, red
    [item] = json.loads(goal("triage", "list", "--json").stdout)
    refused = goal("triage", "act", item["triageId"], "accept")
    assert refused.returncode == 65 and "only a green run flagged for a person" in refused.stderr
    assert load(gid)["state"] == "escalated"
