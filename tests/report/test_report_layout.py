"""The report's words follow the judge that judged, and its layout holds with long lines (issue 28, item 5):
headless Chromium lays out an iteration whose condition has a 200-character command and a 600-character
failure line, and no column of its conditions table gets under a fifth of the table's width."""

from __future__ import annotations

import json
import os

import pytest

from goal_convergence.models import Goal
from goal_convergence.report import page
from tests.browser import Browser, find_chromium
from tests.conftest import run_goal
from tests.histories import history_goal

COMMAND = "/home/someone/projects/shop/.venv-with-a-long-name/bin/python3.11 -m pytest -q " + " ".join(
    f"tests/test_module_{i}.py" for i in range(8))
FAILURE = "FAILED tests/test_pricing.py::test_totals - AssertionError: " + "expected 10.00 but got 9.99; " * 19

WIDTHS = """JSON.stringify([...document.querySelectorAll("#it-3 table.conds")].map(t => {
  const row = t.querySelector("tr"), width = t.getBoundingClientRect().width;
  return [...row.children].map(td => td.getBoundingClientRect().width / width);
}))"""


@pytest.fixture(scope="module")
def browser():
    binary = find_chromium()
    if not binary:
        if os.environ.get("CI") and not os.environ.get("GOAL_BROWSER_SKIP"):
            pytest.fail("Chromium is missing; .ci/run installs it (apt-get install -y chromium)")
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium)")
    with Browser(binary, width=1100, height=900) as b:
        yield b


def long_lines_goal() -> Goal:
    goal = history_goal(3, end="ceiling")
    last = goal.history[-1]
    last.conditions[0] = last.conditions[0].model_copy(update={"command": COMMAND, "passed": False, "exit_code": 1,
                                                               "failure_lines": [FAILURE]})
    return goal


def test_a_long_failure_line_and_command_leave_every_column_a_fifth_of_the_width(browser, tmp_path):
    assert len(COMMAND) >= 200 and len(FAILURE) >= 600
    out = tmp_path / "long.html"
    out.write_text(page.render_goal(long_lines_goal()), encoding="utf-8")
    browser.load(out.as_uri())
    [columns] = json.loads(browser.evaluate(WIDTHS))
    assert len(columns) >= 2 and min(columns) >= 0.2, columns


def test_the_report_of_a_goal_the_conditions_judged_names_no_oracle(git_repo, tmp_path):
    done = run_goal(git_repo, "run", "make it pass", "--test", "true", "--oracle", "conditions", "--maker-cmd", "true",
                    "--json")
    goal_id = json.loads(done.stdout)["goalId"]
    out = tmp_path / "r.html"
    assert run_goal(git_repo, "report", goal_id, "--output", str(out)).returncode == 0
    text = out.read_text(encoding="utf-8")
    assert "the oracle agrees" not in text and "Oracle verdict" not in text and "confidence 1.00" not in text
    assert "the conditions alone judge: no oracle model" in text
    assert "Judged by the conditions alone (no oracle model): converged" in text
