"""A failing test that two conditions run (the tests, and the same tests again as coverage or another check) is
one failing test: `goal status`'s trend and the report count it once, and name the census they count
(issue 28, item 2)."""

from __future__ import annotations

import json
import re
import shlex
import sys

from tests.conftest import git
from tests.conftest import run_goal as goal

PY = shlex.quote(sys.executable)
# The maker leaves the bug the first time (so one iteration fails one test) and fixes it the second.
MAKER = """import pathlib, sys
seen = pathlib.Path(sys.argv[1])
if seen.exists():
    pathlib.Path("calc.py").write_text("def add(a, b):\\n    return a + b\\n")
seen.write_text("x")
"""


def test_a_failing_test_run_by_two_conditions_is_counted_once(git_repo, tmp_path):
    (tmp_path / "maker.py").write_text(MAKER)
    maker = f"{PY} {tmp_path / 'maker.py'} {tmp_path / 'seen'}"
    (git_repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (git_repo / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n\n\n"
                                           "def test_zero():\n    assert add(0, 0) == 0\n")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "a bug")
    tests = f"{PY} -m pytest -q -p no:cacheprovider"
    done = goal(git_repo, "run", "fix add", "--test", tests, "--check", tests, "--oracle", "conditions",
                "--maker-cmd", maker, "--json")
    assert done.returncode == 0, done.stderr
    ledger = json.loads(done.stdout)
    assert [[c["failed"] for c in it["census"]] for it in ledger["evidence"]] == [[1, 1], [0, 0]]  # each its own

    status = goal(git_repo, "status", ledger["goalId"]).stdout
    assert "tests [0] at start: pytest: 2 ran (1 passed, 1 failed)" in status
    [trend] = [line for line in status.splitlines() if line.startswith("trend")]
    assert trend.startswith("trend #1-#2: failing tests [0] █▁ (1 → 0)")

    page = (git_repo / "r.html")
    assert goal(git_repo, "report", ledger["goalId"], "--output", str(page)).returncode == 0
    text = page.read_text()
    assert "Failing tests (census of condition [0])" in text
    assert re.findall(r'data-failing="(\d+)"', text) == ["1", "0"] and "1 failing tests" in text
