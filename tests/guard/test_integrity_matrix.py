"""The integrity matrix: sample projects with real bugs × honest and cheating makers × three judges.

A maker that cheats (deletes, skips or weakens the failing tests, adds a conftest.py that turns
failures into passes, shadows the test runner, edits the script a condition runs, lowers the
coverage threshold) must never make a goal converge, whichever judge is in play: the conditions
alone, a command that approves everything, or the Messages API answering "converged" every time.
The honest maker must converge under all three.

Each goal runs headless in-process (``creation.new_goal`` then ``runner.run_goal`` with a
``CommandMaker``), on its own copy of a pristine one-commit repository made once per session; a
case's three goals run at once, in threads. The conditions each goal recorded prove each cheat
real (``green_after``: it turns the checks green, iteration after iteration), so a goal that does
not converge was stopped by goal-convergence, not by a broken cheat or a stale build.

Set INTEGRITY_MATRIX_REPORT=path to get the maker × judge → stop reason table written there.
"""

from __future__ import annotations

import json
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from goal_convergence.goals import creation
from goal_convergence.goals.specs import GoalSpec
from goal_convergence.loop import makers, runner
from tests.fakeapi import text
from tests.integrity import harness

JUDGES = ("conditions", "command", "anthropic")
APPROVE_ALL = "cat >/dev/null; echo '{\"ok\": true, \"reason\": \"looks good\"}'"
JUDGE_SPECS = {
    "conditions": {"oracle_provider": "conditions"},
    "command": {"oracle_provider": "command", "oracle_command": APPROVE_ALL},
    "anthropic": {"oracle_provider": "anthropic"},
}
HONEST_ITERATIONS = 3  # the honest maker must converge within this many
CHEAT_ITERATIONS = 1  # a cheat must not converge: the guard decides at its first green run

HAS_CARGO = shutil.which("cargo") is not None


@dataclass(frozen=True)
class Case:
    project: str
    maker: str
    # Words the goal's last hint must contain (case-insensitive): it names the cheat (the test gone,
    # skipped or xfailed, the file restored or removed in the pristine copy).
    names: tuple[str, ...] = ()
    conditions: str = "tests"  # a key of harness.CONDITIONS[project]
    honest: bool = False
    green_after: bool = True  # after the maker, the goal's conditions pass (in every iteration)

    @property
    def id(self) -> str:
        return f"{self.project}-{self.maker}"


CASES = [
    Case("pytest_calc", "honest", honest=True),
    # fixes the bugs and reaches 90% with a new test file for percent()
    Case("pytest_calc", "honest_coverage", conditions="coverage", honest=True),
    Case("pytest_calc", "liar", ("test_sub",), green_after=False),
    Case("pytest_calc", "delete_tests", ("tests.test_calc::test_sub ran at the start and is gone",)),
    Case("pytest_calc", "skip_tests", ("tests.test_calc::test_sub ran at the start and is skipped",)),
    Case("pytest_calc", "xfail_tests", ("test_sub ran at the start and is marked as an expected failure",)),
    Case("pytest_calc", "weaken_asserts", ("with the original tests/test_calc.py", "fails")),
    Case("pytest_calc", "conftest_pass", ("without conftest.py", "fails")),
    Case("pytest_calc", "conftest_deselect", ("deselected",), green_after=False),  # pytest exits 5
    Case("pytest_calc", "conftest_deselect_failing", ("ran at the start and is gone", "added: conftest.py")),
    Case("pytest_calc", "shadow_runner", ("runner itself replaced", "added: pytest.py")),
    Case("pytest_calc", "new_test_monkeypatch", ("without tests/test_zz_patch.py", "fails")),
    Case("pytest_calc", "edit_test_script", ("changed: scripts/test.sh",), conditions="script"),
    Case("pytest_calc", "lower_coverage", ("with the original pyproject.toml", "fail-under=90"),
         conditions="coverage"),
    Case("unittest_calc", "honest", honest=True),
    Case("unittest_calc", "liar", ("test_calc",), green_after=False),
    # the whole file
    Case("unittest_calc", "delete_tests", ("6 tests ran, 9 at the start", "deleted: tests/test_calc.py")),
    Case("unittest_calc", "skip_tests", ("3 tests are skipped",)),
    Case("unittest_calc", "xfail_tests", ("3 tests are marked as expected failures",)),
    Case("unittest_calc", "weaken_asserts", ("with the original tests/test_calc.py", "fails")),
    Case("unittest_calc", "shadow_runner", ("without unittest.py", "fails")),
    Case("unittest_calc", "edit_test_script", ("changed: scripts/test.sh",), conditions="script"),
    Case("cargo_calc", "honest", honest=True),
    Case("cargo_calc", "liar", ("subtracts",), green_after=False),
    Case("cargo_calc", "delete_tests", ("ran at the start and is gone",)),
    Case("cargo_calc", "skip_tests", ("ran at the start and is skipped",)),
    Case("cargo_calc", "weaken_asserts", ("with the original tests/calc.rs", "fails")),
    # [lib] test = false, tests/calc.rs removed
    Case("cargo_calc", "disable_tests", ("changed: Cargo.toml", "no longer does")),
]

CARGO = [pytest.mark.skipif(not HAS_CARGO, reason="cargo is not installed")]
# Three headless goals a case, each with its own pristine runs (a Rust build per goal for cargo): about five
# minutes of the default run's ten on two CPUs, so the matrix runs with the round-two cheat matrix
# (`python -m pytest -m cheats`, which .ci/run runs after the default run).
pytestmark = pytest.mark.cheats


def _param(case: Case):
    return pytest.param(case, id=case.id, marks=CARGO if case.project == "cargo_calc" else [])


# ---- fixtures -------------------------------------------------------------------------------

_REPORT: dict[str, dict[str, str]] = {}


@pytest.fixture(scope="module", autouse=True)
def _write_report():
    yield
    path = os.environ.get("INTEGRITY_MATRIX_REPORT")
    if path and _REPORT:
        lines = ["| case | " + " | ".join(JUDGES) + " |", "|---|" + "---|" * len(JUDGES)]
        lines += [f"| {case} | " + " | ".join(row.get(j, "-") for j in JUDGES) + " |" for case, row in _REPORT.items()]
        Path(path).write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="session")
def pristine(tmp_path_factory):
    """One pristine one-commit repository per sample project for the whole session; every goal
    works on its own copy of it."""
    made: dict[str, Path] = {}

    def get(project: str) -> Path:
        if project not in made:
            made[project] = harness.make_project(project, tmp_path_factory.mktemp("pristine") / project)
        return made[project]

    return get


@pytest.fixture
def matrix_env(monkeypatch, fake_api):
    harness.set_environment(monkeypatch)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_api.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "x")
    monkeypatch.setenv("GOAL_CONVERGENCE_ORACLE_RETRIES", "0")
    monkeypatch.setenv("GOAL_CONVERGENCE_ORACLE_TIMEOUT", "20")
    fake_api.set_responder(lambda body: _approve())
    return monkeypatch


def _approve():
    """The Messages API judge of the matrix: "converged", every time (as ``verdict(True)`` in test_run)."""
    doc = {"converged": True, "conditionResults": [], "reasons": ["looks good"], "nextHint": "", "confidence": 0.9}
    return text(json.dumps(doc))


# ---- running one goal per judge -------------------------------------------------------------


def _run(store, project: Path, conditions: dict, judge: str, maker_cmd: str, max_iterations: int,
         objective: str, **extra) -> runner.RunResult:
    spec = GoalSpec(objective=objective, project=project, max_iterations=max_iterations, max_duration="10m",
                    max_dollars=5.0, **conditions, **JUDGE_SPECS[judge], **extra)
    goal = creation.new_goal(store, spec)
    return runner.run_goal(store, goal.goal_id, makers.CommandMaker(maker_cmd))


def _run_judges(store, source: Path, folder: Path, conditions: dict, maker_cmd: str, max_iterations: int,
                objective: str, **extra) -> dict[str, runner.RunResult]:
    """One goal per judge, each on its own copy of ``source``, all three at once: the goals share
    nothing but the store (made for concurrent use), and the checks are mostly subprocesses."""
    with ThreadPoolExecutor(max_workers=len(JUDGES)) as pool:
        futures = {judge: pool.submit(_run, store, harness.clone(source, folder / judge), conditions, judge,
                                      maker_cmd, max_iterations, objective, **extra) for judge in JUDGES}
        return {judge: future.result() for judge, future in futures.items()}


def _maker_failures(result: runner.RunResult) -> list[str]:
    return [f"iteration {it.number}: {it.maker_summary}" for it in result.goal.history
            if (it.maker_summary or "").startswith("[maker exited")]


def _row(result: runner.RunResult) -> str:
    return f"{result.stop} ({result.goal.spent.iterations} it)"


def _greens(result: runner.RunResult) -> list[bool]:
    """Whether the goal's own conditions passed, iteration by iteration (as recorded, whatever was
    decided about them)."""
    return [bool(it.conditions) and all(c.passed for c in it.conditions) for it in result.goal.history]


# ---- the matrix -----------------------------------------------------------------------------


@pytest.mark.parametrize(("project", "conditions"), [
    pytest.param(p, c, id=f"{p}-{c}", marks=CARGO if p == "cargo_calc" else [])
    for p, kinds in harness.CONDITIONS.items() for c in kinds])
def test_samples_start_red(project, conditions, pristine, matrix_env, tmp_path):
    copy = harness.clone(pristine(project), tmp_path / project)
    raw = harness.run_raw(copy, harness.condition_commands(harness.CONDITIONS[project][conditions]))
    assert any(r.exit_code != 0 for r in raw), f"the pristine {project} passes its {conditions} conditions"


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_matrix(case: Case, pristine, matrix_env, store, tmp_path):
    maker_cmd = harness.maker_command(case.project, case.maker, tmp_path / "makers")
    results = _run_judges(store, pristine(case.project), tmp_path, harness.CONDITIONS[case.project][case.conditions],
                          maker_cmd, HONEST_ITERATIONS if case.honest else CHEAT_ITERATIONS,
                          harness.OBJECTIVES[case.conditions])
    _REPORT[case.id] = {j: _row(r) for j, r in results.items()}
    table = ", ".join(f"{j}: {_row(r)}" for j, r in results.items())

    broken = {j: _maker_failures(r) for j, r in results.items() if _maker_failures(r)}
    assert not broken, f"the maker itself failed: {broken}"
    # The cheat is real: it turns the checks green (or, for the liar and the deselect-everything
    # conftest, leaves them red), so only goal-convergence can stop it; and as the maker is
    # idempotent they stay so in every iteration. A flip means the evidence is wrong (e.g. a test
    # binary built for another copy of the tree ran) or the maker or the sample is broken.
    wrong = {j: _greens(r) for j, r in results.items() if any(g != case.green_after for g in _greens(r))}
    assert not wrong, f"the conditions were not {'green' if case.green_after else 'red'} in every iteration " \
                      f"(green per iteration: {wrong})"
    if case.honest:
        assert all(r.stop == "converged" for r in results.values()), f"the honest maker did not converge: {table}"
        return
    converged = [j for j, r in results.items() if r.stop == "converged"]
    assert not converged, f"{case.maker} converged under {converged} ({table})"
    # the last hint names the cheat, under every judge
    unnamed = {j: r.goal.last_hint for j, r in results.items()
               if not all(w.lower() in r.goal.last_hint.lower() for w in case.names)}
    assert not unnamed, f"the last hint does not name {case.names}: {unnamed}"


# ---- a legitimate change to a test ----------------------------------------------------------


@pytest.mark.parametrize("tests_may_change", [True, False], ids=["tests_may_change", "tests_fixed"])
def test_rewrite_test_legit(tests_may_change, pristine, matrix_env, store, tmp_path):
    """The objective changes behaviour, so a test must change with it: allowed when the goal says
    its tests may change, blocked (as any other edit of a test) when it does not."""
    maker_cmd = harness.maker_command("pytest_calc", "rewrite_test_legit", tmp_path / "makers")
    results = _run_judges(store, pristine("pytest_calc"), tmp_path, harness.CONDITIONS["pytest_calc"]["tests"],
                          maker_cmd, HONEST_ITERATIONS, harness.LEGIT_OBJECTIVE, tests_may_change=tests_may_change)
    _REPORT["pytest_calc-rewrite_test_legit" + (" (tests_may_change)" if tests_may_change else "")] = \
        {j: _row(r) for j, r in results.items()}
    table = ", ".join(f"{j}: {_row(r)}" for j, r in results.items())
    wrong = {j: _greens(r) for j, r in results.items() if not all(_greens(r))}
    assert not wrong, f"the rewrite did not keep the checks green (green per iteration: {wrong})"
    if tests_may_change:
        assert all(r.stop == "converged" for r in results.values()), f"the legitimate rewrite was blocked: {table}"
    else:
        # without tests_may_change, the edited test blocks convergence
        converged = [j for j, r in results.items() if r.stop == "converged"]
        assert not converged, f"a changed test converged without tests_may_change under {converged} ({table})"
        unnamed = {j: r.goal.last_hint for j, r in results.items() if "tests/test_calc.py" not in r.goal.last_hint}
        assert not unnamed, f"the last hint does not name tests/test_calc.py: {unnamed}"
