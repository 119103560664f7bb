"""The fleet workflow (.github/workflows/goals.yml) run for real by act, every job on this machine
(tests/actrunner.py): a user's repository calls it twice in one run, once with a list of three goals and
once as a heartbeat, and the checks below read what act ran and logged.

act runs are slow (a job installs the package into a fresh venv, as a hosted runner does), so one run
covers every case; these tests are outside the default run (`python -m pytest -m act`; .ci/run runs them).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from tests.actrunner import HERE, REPO, Act, ActRun, copy_repository, git

pytestmark = pytest.mark.act

CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a + b\n"
GREET = "def greet(name):\n    return 'hello ' + name\n"


def _check(module: str, call: str, want: str) -> str:
    return (f"from {module} import *\n\nwant = {want}\ngot = {call}\nassert got == want, f'{{got!r}}, not {{want!r}}'\n"
            "print('1 passed')\n")


# The scripted maker: makes the fix its argument names, in the goal's project (its working directory).
MAKER = '''"""The act tests' maker: one fix, by name; "none" changes nothing (a maker that cannot do the work)."""
import pathlib
import sys

FIXES = {"add": ("calc.py", "def add(a, b):\\n    return a - b", "def add(a, b):\\n    return a + b"),
         "sub": ("calc.py", "def sub(a, b):\\n    return a + b", "def sub(a, b):\\n    return a - b"),
         "greet": ("greet.py", "'hello ' + name", "f'Hello, {name}!'")}
if sys.argv[1] in FIXES:
    name, old, new = FIXES[sys.argv[1]]
    path = pathlib.Path(name)
    path.write_text(path.read_text().replace(old, new))
'''
# The heartbeat's checks: the style check first, which no maker here can fix (its goal escalates and its job
# fails), then the greeting's test, which the maker fixes: the failing job leaves the other going.
HEARTBEAT_SETTINGS = """[heartbeat]
oracle = "conditions"
checks = [
  { type = "lint_clean", command = "python3 check_style.py" },
  { type = "test_pass", command = "python3 test_greet.py" },
]

[heartbeat.budget]
max_iterations = 2
max_dollars = 0
"""
FILES = {
    "calc.py": CALC,
    "test_add.py": _check("calc", "add(2, 3)", "5"),
    "test_sub.py": _check("calc", "sub(5, 3)", "2"),
    "test_mul.py": _check("calc", "mul(2, 3)", "6"),
    "greet.py": GREET,
    "test_greet.py": _check("greet", "greet('Ada')", "'Hello, Ada!'"),
    "check_style.py": "print('style: calc.py:1: E999 the house style wants tabs'); raise SystemExit(1)\n",
    ".goal-convergence.toml": HEARTBEAT_SETTINGS,
    "tools/maker.py": MAKER,
}
GOALS = [
    {"objective": "make add() add", "test": "python3 test_add.py", "maker-cmd": "python3 tools/maker.py add"},
    {"objective": "make sub() subtract", "test": "python3 test_sub.py", "maker-cmd": "python3 tools/maker.py sub",
     "max-dollars": 2},
    {"objective": "make mul() multiply", "test": "python3 test_mul.py", "maker-cmd": "python3 tools/maker.py none",
     "max-iterations": 2},
]
FLEET = f"{HERE.split('@')[0]}/.github/workflows/goals.yml@main"
DOCS = REPO / "docs" / "fleets.md"
SHOWN = re.compile(r"(<!-- fleet summary: written by tests/actions/test_fleet_act.py -->\n)(.*?)"
                   r"(<!-- end of the fleet summary -->)", re.S)


def caller(python_version: str) -> str:
    """The user's workflow: the list fleet (its jobs pass whatever the goals do, fail-unless-met false), a job
    that puts what that call gave back (its result and outputs) in its job summary, where act's log carries it
    to the checks, then the heartbeat fleet with the defaults, whose escalating goal fails its job (act stops
    a run at a failed call, so it comes last)."""
    return yaml.safe_dump({
        "name": "fleets",
        "on": "workflow_dispatch",
        "jobs": {
            "fleet": {"uses": FLEET, "with": {
                "goals": json.dumps(GOALS), "max-parallel": 1, "max-dollars": "10", "oracle": "conditions",
                "pull-request": True, "fail-unless-met": False, "python-version": python_version}},
            "outputs": {"needs": "fleet", "runs-on": "ubuntu-latest", "steps": [
                {"env": {"NEEDS": "${{ toJSON(needs) }}"}, "run": 'printf "%s\\n" "$NEEDS" >> "$GITHUB_STEP_SUMMARY"'}]},
            "heartbeat": {"needs": "outputs", "uses": FLEET, "with": {
                "heartbeat": True, "max-parallel": 1, "max-dollars": "3", "oracle": "conditions",
                "maker-cmd": "python3 tools/maker.py greet"}},
        },
    }, sort_keys=False)


def run_fleets(root: Path, action: Path, wheels: Path) -> tuple[Act, ActRun]:
    act = Act(root, action, wheels)
    act.commit({**FILES, ".github/workflows/fleets.yml": caller(f"{sys.version_info[0]}.{sys.version_info[1]}")})
    return act, act.run(".github/workflows/fleets.yml")


@pytest.fixture(scope="module")
def fleets(tmp_path_factory, wheels) -> tuple[Act, ActRun]:
    return run_fleets(tmp_path_factory.mktemp("act"), copy_repository(tmp_path_factory.mktemp("action")), wheels)


def goal_jobs(run: ActRun, fleet: str) -> dict[str, str]:
    """The matrix jobs of one call (``fleet`` or ``heartbeat``), by goal name: failure when a step of the job
    failed, else success. (act's own job result is the matrix's, one for all its jobs, as `needs` has it.)"""
    jobs: dict[str, str] = {}
    for entry in run.log:
        parts = [p.strip() for p in entry.get("job", "").split("/")]
        if parts[0] == fleet and len(parts) == 3 and parts[2] not in ("plan", "summary"):
            name = re.sub(r"-\d+$", "", parts[2])
            failed = entry.get("stepResult") == "failure" or jobs.get(name) == "failure"
            jobs[name] = "failure" if failed else "success"
    return jobs


def fleet_summary(run: ActRun, fleet: str) -> str:
    [summary] = {s for s in run.summaries(f"{fleet}/goals/summary")}  # act logs a composite's summary twice
    return summary


def returned(run: ActRun) -> dict:
    """What the list fleet's call gave back to the workflow that called it (the outputs job's summary)."""
    [text] = run.summaries("outputs")
    return json.loads(text)["fleet"]


def test_each_goal_runs_in_its_own_job_and_a_failing_one_leaves_the_others_going(fleets):
    _, run = fleets
    assert goal_jobs(run, "fleet") == {"make add() add": "success", "make sub() subtract": "success",
                                       "make mul() multiply": "success"}, run.tail()
    assert goal_jobs(run, "heartbeat") == {"heartbeat: make `python3 check_style.py` pass again": "failure",
                                           "heartbeat: make `python3 test_greet.py` pass again": "success"}, run.tail()
    # The escalating goal failed its job (fail-unless-met, the default) and the run: the summary job ran anyway.
    assert run.exit_code != 0 and run.results()["heartbeat/goals/summary"] == "success", run.tail()


def test_the_fleet_gives_back_met_count_and_met_count(fleets):
    _, run = fleets
    fleet = returned(run)
    assert fleet["result"] == "success", run.tail()
    assert fleet["outputs"] == {"met": "false", "count": "3", "met-count": "2"}


def test_the_job_summary_is_one_table_of_the_goals_with_their_budgets(fleets):
    _, run = fleets
    summary = fleet_summary(run, "fleet")
    assert summary.startswith("### goal-convergence: 2 of 3 goals met\n")
    rows = re.findall(r"^\| (✅|❌) \| `(goal-[a-z0-9]{8})` \| (.*?) \| (\w+) \| (\d+) \| (.*?) \|$", summary, re.M)
    assert sorted((r[2], r[0], r[3], r[5]) for r in rows) == [
        ("make add() add", "✅", "converged", "$0.00 of $4.00"),
        ("make mul() multiply", "❌", "ceiling", "$0.00 of $4.00"),
        ("make sub() subtract", "✅", "converged", "$0.00 of $2.00")]
    assert "Total spent: $0.00 of the fleet's $10.00 (max-dollars, split over its goals)." in summary
    [plan] = set(run.summaries("fleet/goals/plan"))
    assert "- make sub() subtract (up to $2.00)" in plan and "Fleet budget: $10.00 (max-dollars)" in plan


def test_max_parallel_runs_the_goals_one_at_a_time(fleets):
    """max-parallel 1: in act's log (lines in the order they happened) each goal's job ends before the next
    one's first line."""
    _, run = fleets
    spans = {}
    for n, entry in enumerate(run.log):
        job = entry.get("job", "")
        if job.startswith("fleet/goals/make"):
            first, _ = spans.get(job, (n, n))
            spans[job] = (first, n)
    ordered = sorted(spans.values())
    assert len(ordered) == 3
    assert all(a[1] < b[0] for a, b in zip(ordered, ordered[1:])), ordered


def test_the_heartbeat_plans_a_goal_for_each_failing_check_with_its_share_of_the_budget(fleets):
    _, run = fleets
    [plan] = set(run.summaries("heartbeat/goals/plan"))
    assert "### goal-convergence: 2 goal(s) to run" in plan and "2 failing" in plan
    assert "- heartbeat: make `python3 test_greet.py` pass again (up to $1.50)" in plan
    summary = fleet_summary(run, "heartbeat")
    assert summary.startswith("### goal-convergence: 1 of 2 goals met\n")
    assert "Total spent: $0.00 of the fleet's $3.00" in summary


def test_each_converged_goal_opens_a_pull_request_with_its_change(fleets):
    act, run = fleets
    rows = dict(re.findall(r"^\| ✅ \| `(goal-[a-z0-9]{8})` \| (.*?) \|", fleet_summary(run, "fleet"), re.M))
    assert sorted(rows.values()) == ["make add() add", "make sub() subtract"]
    opened = {c["args"][c["args"].index("--title") + 1]: c for c in run.pull_requests
              if c["args"][:2] == ["pr", "create"]}
    assert sorted(opened) == ["make add() add", "make sub() subtract"], run.tail()  # none for the goal that escalated
    for goal_id, objective in rows.items():
        args = opened[objective]["args"]
        branch = f"goal-convergence/{goal_id}"
        assert args[:6] == ["pr", "create", "--base", "main", "--head", branch]
        assert opened[objective]["body"].startswith(f"### ✅ `{goal_id}` converged")
        assert git(act.origin, "show", "--name-only", "--format=%an", branch) == "github-actions[bot]\n\ncalc.py\n"
    calc = git(act.origin, "show", f"goal-convergence/{[g for g, o in rows.items() if 'sub' in o][0]}:calc.py")
    assert "def sub(a, b):\n    return a - b" in calc and "def add(a, b):\n    return a - b" in calc


def test_setup_python_runs_only_when_a_version_is_asked_for(fleets):
    _, run = fleets
    said = {e.get("job", "").strip() for e in run.log if "stand-in setup-python:" in e.get("msg", "")}
    # The list fleet names a version, for its plan, its three goals and its summary; the heartbeat fleet uses
    # the runner's python3.
    assert len(said) == 5 and all(job.startswith("fleet/goals/") for job in said), said


def test_every_goal_uploads_its_goal_file_ledger_and_report_named_for_its_fleet(fleets):
    _, run = fleets
    artifacts = sorted(run.artifacts.iterdir())
    names = [re.fullmatch(r"(fleet-[0-9a-f]{8})-goal-[a-z0-9]{8}", p.name) for p in artifacts]
    assert all(names) and sorted(Counter(n[1] for n in names).values()) == [2, 3], [p.name for p in artifacts]
    for folder in artifacts:
        goal_id = folder.name.split("-", 2)[2]
        assert {f"{goal_id}.json", "ledger.json", "ledger.md", "report.html"} <= {p.name for p in folder.iterdir()}


def _form(markdown: str) -> list[str]:
    """A summary's lines without what changes from run to run: the goal ids, and so the rows' order."""
    return sorted(re.sub(r"goal-[a-z0-9]{8}", "goal-ID", line) for line in markdown.strip().splitlines())


def test_the_fleets_page_shows_a_real_runs_summary(fleets):
    _, run = fleets
    summary = fleet_summary(run, "fleet")
    if os.environ.get("GOAL_WRITE_DOCS"):
        DOCS.write_text(SHOWN.sub(lambda m: f"{m[1]}\n{summary.strip()}\n\n{m[3]}", DOCS.read_text()))
    shown = SHOWN.search(DOCS.read_text())
    assert shown, "docs/fleets.md lost its fleet summary markers"
    assert _form(shown[2]) == _form(summary), "docs/fleets.md shows an old summary: run this with GOAL_WRITE_DOCS=1"
