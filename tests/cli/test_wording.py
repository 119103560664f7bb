"""What the screens say, word for word where the words were wrong (issue 28, item 6): money in cents, a state
said once, an id said once, the pristine re-run's note, the help of `goal triage act`, the hidden `goal slash`,
and a stuck goal's triage item that offers no "best checkpoint" which is only the current state."""

from __future__ import annotations

import json

import pytest

from goal_convergence.models import Integrity, IntegrityIssue
from goal_convergence.report import render
from goal_convergence.system.text import money
from tests.conftest import run_goal as goal


@pytest.mark.parametrize(("dollars", "shown"), [
    (0, "$0.00"), (0.5, "$0.50"), (1, "$1.00"), (12.3, "$12.30"), (0.0149, "$0.01"), (0.01, "$0.01"),
    (0.0042, "$0.0042"), (0.005, "$0.005"), (0.000123456, "$0.00012"), (1e-9, "<$0.000001"),
])
def test_money_is_shown_in_cents_and_with_more_digits_only_below_a_cent(dollars, shown):
    assert money(dollars) == shown


def test_a_state_is_said_once_and_a_stop_reason_only_when_it_says_more(make_goal):
    assert render.state_line(make_goal(state="converged", stop_reason="converged")) == "state: converged"
    assert render.state_line(make_goal(state="escalated", stop_reason="stuck")) == "state: escalated (stuck)"


def test_an_integrity_issue_names_its_test_once():
    test = "tests.test_x.SentenceCount::test_ends"
    guard = Integrity(issues=[IntegrityIssue(kind="test-skipped", subject=test, detail=f"{test} ran at the start "
                                             "and is skipped now", since=2)],
                      pristine_note="skipped, as the test census or the environment already refuses this run")
    assert render.guard_lines(guard) == [
        "pristine re-run: skipped, as the test census or the environment already refuses this run",
        f"issue: test-skipped: {test} ran at the start and is skipped now (since #2)"]


def test_the_help_explains_triage_acts_argument_and_hides_the_slash_helper(tmp_path):
    act = goal(tmp_path, "triage", "act", "--help").stdout
    assert act.startswith("Usage: goal triage act [OPTIONS] TRIAGE_ID [ACTION]\n")
    assert "ACTION is `goal` (the default)" in " ".join(act.split()) and "`accept`" in act
    assert "slash" not in goal(tmp_path, "--help").stdout


def test_a_stuck_goal_offers_no_best_checkpoint_that_is_its_current_state(git_repo):
    done = goal(git_repo, "run", "never", "--test", "false", "--oracle", "conditions", "--maker-cmd", "true",
                "--stuck-after", "2", "--json")
    ledger = json.loads(done.stdout)
    assert (done.returncode, ledger["stop"]) == (2, "stuck"), done.stderr
    shown = goal(git_repo, "triage", "show", ledger["triageId"]).stdout
    assert "stop" in shown and "best checkpoint" not in shown


def test_goal_new_outside_git_and_with_no_judge_says_so_when_the_goal_is_made(tmp_path, monkeypatch):
    monkeypatch.delenv("CLAUDE_BIN", raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no `claude`: the auto oracle has no judge here
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "test_a.py").write_text("def test_a():\n    pass\n")
    made = goal(folder, "new", "make it pass", "--test", "true")
    assert made.returncode == 0, made.stderr
    notes = [line for line in made.stdout.splitlines() if line.startswith("note: ")]
    assert notes[0].startswith(f"note: {folder} is not a git repository (or has no commit yet): the baseline is a "
                               f"copy of 1 check-defining file, and there will be no checkpoints")
    assert notes[1].startswith("note: no oracle can run here yet, so no iteration can be judged: `goal run` refuses "
                               "the goal (exit 69)") and "--oracle conditions" in notes[1]
    as_json = goal(folder, "new", "another", "--test", "true", "--oracle", "conditions", "--json")
    assert json.loads(as_json.stdout)["oracle"]["provider"] == "conditions"
    assert as_json.stderr.startswith(f"note: {folder} is not a git repository") and "no oracle" not in as_json.stderr


def test_goal_new_in_a_git_repository_with_a_judge_adds_no_note(git_repo):
    made = goal(git_repo, "new", "make it pass", "--test", "true", "--oracle", "conditions")
    assert made.returncode == 0 and "note: " not in made.stdout + made.stderr
