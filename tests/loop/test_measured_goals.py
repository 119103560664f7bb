"""Measured goals and blamed regressions, through real `goal run` loops on real git repositories: a lint count
that falls to 0 converges, one that stops falling ends stuck, a benchmark is the median of its runs, and a check
or test that an iteration broke is blamed on it, files and `goal diff` command named, in the maker's hint."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from goal_convergence.checks import conditions
from goal_convergence.models import StoppingCondition
from tests.cli.test_run import env, goal, load, maker_script, project  # noqa: F401 (fixtures)

COUNT = "python3 count.py"  # names no file the maker fixes: the files a metric names are check-defining
# Fixes one warning a turn until ``FLOOR`` are left, then only touches notes.txt (so the files keep changing).
FIX_WARNINGS = """
import os, pathlib
floor = int(os.environ.get("FLOOR", "0"))
path = pathlib.Path("warnings.txt")
lines = path.read_text().splitlines(keepends=True)
if len(lines) > floor:
    path.write_text("".join(lines[1:]))
    print(f"fixed one warning, {len(lines) - 1} left")
else:
    with open("notes.txt", "a") as fh:
        fh.write("tried something else\\n")
    print("tried something else")
with open(os.environ["MAKER_LOG"], "a") as fh:
    fh.write(os.environ.get("GOAL_HINT", "").replace("\\n", " ") + "\\n")
"""


@pytest.fixture
def lint(project: Path) -> Path:
    (project / "warnings.txt").write_text("".join(f"W{i} line too long\n" for i in range(3)))
    (project / "count.py").write_text("import pathlib\nprint(len(pathlib.Path('warnings.txt').read_text().splitlines()))\n")
    return project


def test_a_lint_count_goal_converges_when_the_count_reaches_zero(lint, env, tmp_path):
    done = goal("run", "bring the lint warnings to 0", "--metric", COUNT, "--target", "<= 0", "--oracle", "conditions",
                "--maker-cmd", maker_script(tmp_path, FIX_WARNINGS), "--json")
    ledger = json.loads(done.stdout)
    assert (done.returncode, ledger["stop"], ledger["turns"]) == (0, "converged", 3), done.stderr
    doc = load(ledger["goalId"])
    assert [it["conditions"][0]["metric"] for it in doc["history"]] == [2, 1, 0]
    assert doc["stoppingConditions"][0] == {"type": "metric", "command": COUNT, "threshold": None, "coverageRegex": None,
                                             "description": None, "timeoutSeconds": None, "target": "<= 0"}
    status = goal("status", ledger["goalId"]).stdout
    assert f"[0] metric (target <= 0): {COUNT}" in status
    assert re.search(r"metric \S+ \(2 → 0\)", status), status  # the trend line follows the number


def test_a_count_that_stops_falling_ends_stuck_and_a_worse_one_is_said_in_the_hint(lint, env, tmp_path, monkeypatch):
    monkeypatch.setenv("FLOOR", "2")
    done = goal("run", "bring the lint warnings to 0", "--metric", COUNT, "--target", "<= 0", "--oracle", "conditions",
                "--stuck-after", "2", "--maker-cmd", maker_script(tmp_path, FIX_WARNINGS), "--json")
    ledger = json.loads(done.stdout)
    assert (done.returncode, ledger["stop"]) == (2, "stuck"), done.stderr
    # 2 at the first turn, then 2 and 2: the files changed each time, the number did not
    doc = load(ledger["goalId"])
    assert [it["conditions"][0]["metric"] for it in doc["history"]] == [2, 2, 2]
    assert "no failing metric improved" in doc["history"][-1]["decision"]["notes"][-1]
    assert "the metric is 2, and the target is <= 0" in doc["history"][-1]["conditions"][0]["error"]
    worse = goal("run", "bring the lint warnings to 0", "--metric", COUNT, "--target", "<= 0", "--oracle",
                 "conditions", "--max-iterations", "2", "--maker-cmd", "echo W9 >> warnings.txt", "--json")
    first = load(json.loads(worse.stdout)["goalId"])["history"][0]["decision"]["hint"]
    assert "got worse" not in first  # nothing measured before it to be worse than
    second = load(json.loads(worse.stdout)["goalId"])["history"][1]["decision"]["hint"]
    assert second.startswith(f"The metric `{COUNT}` got worse: 3 → 4 (target <= 0).")  # the first goal left 2


def test_a_noisy_benchmark_counts_the_median_of_its_runs(tmp_path):
    # each run prints the next of 250, 150, 900: one slow outlier, a median of 250 against the target < 300
    (tmp_path / "times.txt").write_text("250\n150\n900\n")
    bench = (f"{sys.executable} -c \"import pathlib; p = pathlib.Path('times.txt'); t = p.read_text().split(); "
             "p.write_text(' '.join(t[1:])); print(f'took {t[0]} ms')\"")
    ev = conditions.run_condition(StoppingCondition(type="metric", command=bench, target="< 300", runs=3), 0, tmp_path)
    assert (ev.passed, ev.metric) == (True, 250)
    slow = conditions.run_condition(StoppingCondition(type="metric", command="echo 'p50: 420.5 ms, p99: 8 ms'",
                                                      target="< 300", metric_regex=r"p50: ([0-9.]+)"), 0, tmp_path)
    assert (slow.passed, slow.metric, slow.error) == (False, 420.5, "the metric is 420.5, and the target is < 300")
    silent = conditions.run_condition(StoppingCondition(type="metric", command="echo no figure", target="< 3"), 0,
                                      tmp_path)
    assert not silent.passed and "could not read a number" in silent.error


@pytest.mark.parametrize(("flags", "message"), [
    (["--metric", COUNT], "--metric needs --target"),
    (["--target", "<= 0"], "--target, --metric-regex and --metric-runs need --metric CMD"),
    (["--metric", COUNT, "--target", "below 3"], "'below 3' is not a target"),
    (["--metric", COUNT, "--target", "<= 0", "--metric-regex", "(x"], "fix --target or --metric-regex"),
])
def test_metric_flags_that_cannot_work_are_refused_with_what_to_give(project, env, flags, message):
    done = goal("new", "bring the count down", "--oracle", "conditions", *flags)
    assert done.returncode == 65 and message in done.stderr, done.stderr


CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n\n\ndef div(a, b):\n    return a * b\n"
TESTS = """from calc import add, div, mul


def test_add():
    assert add(2, 3) == 5


def test_mul():
    assert mul(2, 3) == 6


def test_div():
    assert div(6, 3) == 2
"""
# Turn 1 fixes add(); turn 2 "fixes" div() and breaks mul() on the way (in calc.py, and helpers.py beside it);
# after that it only writes notes.
BREAKS_MUL = """
import os, pathlib
turn = int(os.environ["GOAL_ITERATION"])
calc = pathlib.Path("calc.py")
if turn == 1:
    calc.write_text(calc.read_text().replace("a - b", "a + b"))
elif turn == 2:
    calc.write_text(calc.read_text().replace("return a * b\\n\\n\\ndef div", "return a + b\\n\\n\\ndef div"))
    pathlib.Path("helpers.py").write_text("X = 1\\n")
else:
    pathlib.Path("notes.txt").write_text(str(turn))
with open(os.environ["MAKER_LOG"], "a") as fh:
    fh.write(os.environ.get("GOAL_HINT", "").replace("\\n", " ") + "\\n")
print("worked on calc.py")
"""


def test_a_test_that_an_iteration_broke_is_blamed_on_it_and_one_that_never_passed_is_not(project, env, tmp_path):
    (project / "calc.py").write_text(CALC)
    (project / "test_calc.py").write_text(TESTS)
    done = goal("run", "make the calc tests pass", "--test", f"{sys.executable} -m pytest -q -p no:cacheprovider",
                "--oracle", "conditions", "--max-iterations", "3", "--stuck-after", "5",
                "--maker-cmd", maker_script(tmp_path, BREAKS_MUL), "--json")
    assert json.loads(done.stdout)["stop"] == "ceiling", done.stderr
    gid = json.loads(done.stdout)["goalId"]
    hints = Path(env["MAKER_LOG"]).read_text().splitlines()
    assert "Regressions" not in hints[1]  # after turn 1: add() passes now, div() never did
    assert (f"Regressions: test test_calc::test_mul passed at iteration 1 and fails since iteration 2, which "
            f"changed calc.py, helpers.py (`goal diff {gid} 2`)") in hints[2]
    assert "test_div" not in hints[2].split("Regressions:")[1].split(".")[0]
    doc = load(gid)
    assert [(r["test"], r["passedAt"], r["since"]) for r in doc["history"][1]["regressions"]] == [
        ("test_calc::test_mul", 1, 2)]
    assert doc["history"][1]["checkpoint"]["changed"] == ["calc.py", "helpers.py"]


def test_a_maker_that_rewrites_the_metrics_command_to_print_the_target_is_refused(lint, env, tmp_path):
    done = goal("run", "bring the lint warnings to 0", "--metric", COUNT, "--target", "<= 0", "--oracle", "conditions",
                "--max-iterations", "2", "--maker-cmd", "echo 'print(0)' > count.py", "--json")
    ledger = json.loads(done.stdout)
    assert (done.returncode, ledger["stop"]) == (4, "ceiling"), done.stderr
    last = load(ledger["goalId"])["history"][-1]
    assert last["conditions"][0]["metric"] == 0  # green as it ran, and refused: count.py is what the goal began with
    assert "count.py" in last["integrity"]["changed"] and last["integrity"]["issues"]
