"""The integrity guard on real trees: baseline, scratch copy, pristine re-run, census comparison."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path

import pytest

from goal_convergence.checks import conditions
from goal_convergence.errors import InvalidInput
from goal_convergence.goals import creation, specs
from goal_convergence.guard import integrity, scratch
from goal_convergence.guard.blobs import Blobs
from goal_convergence.loop import runner
from goal_convergence.models import Census, ConditionEvidence, Decision, Iteration, Verdict, now_iso
from goal_convergence.rules.decide import Evidence, decide
from goal_convergence.vcs import tree
from tests.conftest import git

CALC = "def add(a, b):\n    return a + b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"


@pytest.fixture(autouse=True)
def no_bytecode(monkeypatch):
    """The tests rewrite calc.py within a second with the same size: Python would trust stale bytecode."""
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")


@pytest.fixture(scope="module")
def calc_repo(tmp_path_factory) -> Path:
    """The sample repository, made once: each test works on its own copy (git's own files included)."""
    repo = tmp_path_factory.mktemp("calc") / "project"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("fixture\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "init")
    (repo / "calc.py").write_text(CALC)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_calc.py").write_text(TEST)
    (repo / ".gitignore").write_text("__pycache__/\n_version.py\nnode_modules/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "calc")
    return repo


@pytest.fixture
def project(calc_repo: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(calc_repo, tmp_path / "project", symlinks=True))


def new(store, project: Path, **extra):
    spec = specs.GoalSpec(objective="make the tests pass", project=project, test=PYTEST,
                          oracle_provider="conditions", **extra)
    return creation.new_goal(store, spec)


def inspect(store, goal, number: int = 1):
    """The guard as an iteration runs it: after a real run of the goal's conditions."""
    found = conditions.run_conditions(goal.stopping_conditions, Path(goal.project_root))
    assert all(e.passed for e in found), [e.first_failure for e in found]  # the cases here are green runs
    return integrity.inspect(store.root, goal, found, number, green=True)


def test_the_baseline_keeps_the_check_files_content_under_the_home(store, project):
    goal = new(store, project)
    assert goal.baseline is not None and goal.baseline.files == 1
    assert goal.baseline.census[0].summary == "pytest: 1 ran (1 passed, 0 failed)"
    manifest = integrity.load(store.root, goal.goal_id)
    assert "tests/test_calc.py" in manifest.kept and "calc.py" not in manifest.files
    assert Blobs(store.root, goal.goal_id).read(manifest.files["tests/test_calc.py"]) == TEST.encode()
    pack = store.root / "baselines" / "blobs" / f"{goal.goal_id}.pack"  # one pack a goal, not a file a blob
    assert pack.read_bytes().count(TEST.encode()) == 1
    mode = stat.S_IMODE(os.stat(store.root / "baselines" / f"{goal.goal_id}.json").st_mode)
    assert mode == 0o600


def test_an_untouched_tree_needs_no_pristine_run(store, project):
    guard = inspect(store, new(store, project))
    assert guard.issues == [] and guard.pristine is None and "not needed" in guard.pristine_note
    assert not guard.blocks


def test_a_weakened_test_fails_in_the_pristine_copy_and_the_user_tree_is_untouched(store, project, tmp_path,
                                                                                     monkeypatch):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    goal = new(store, project)
    (project / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (project / "tests" / "test_calc.py").write_text(TEST.replace("== 5", "== -1"))
    before = tree.tree_fingerprint(project)
    guard = inspect(store, goal, number=2)
    assert tree.tree_fingerprint(project) == before
    assert guard.changed == ["tests/test_calc.py"] and guard.blocks
    assert guard.pristine is not None and not guard.pristine.passed
    assert guard.pristine.restored == ["tests/test_calc.py"] and guard.pristine.duration_seconds > 0
    [issue] = [i for i in guard.issues if i.kind == "pristine-failed"]
    assert "the original tests/test_calc.py" in issue.detail and issue.since == 2
    assert not list(scratch.glob("goal-pristine-*"))  # cleaned up


def test_an_added_conftest_is_removed_in_the_pristine_copy(store, project):
    goal = new(store, project)
    (project / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (project / "conftest.py").write_text(
        "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
        "    outcome = yield\n    report = outcome.get_result()\n    report.outcome = 'passed'\n")
    guard = inspect(store, goal)
    assert guard.added == ["conftest.py"] and guard.pristine.removed == ["conftest.py"]
    assert not guard.pristine.passed and any(i.kind == "pristine-failed" for i in guard.issues)


def test_an_honest_change_with_a_new_test_passes_the_pristine_run(store, project):
    goal = new(store, project)
    (project / "calc.py").write_text(CALC + "\n\ndef mul(a, b):\n    return a * b\n")
    (project / "tests" / "test_calc.py").write_text(TEST + "\n\ndef test_mul():\n    from calc import mul\n"
                                                    "    assert mul(2, 3) == 6\n")
    (project / "tests" / "test_new.py").write_text("def test_more():\n    assert True\n")
    guard = inspect(store, goal)
    assert guard.pristine is not None and guard.pristine.passed, guard.pristine
    assert guard.added == ["tests/test_new.py"] and not guard.blocks


def test_the_copy_has_ignored_build_output_links_dependencies_and_leaves_caches_out(store, project):
    (project / "_version.py").write_text("version = '1.0'\n")
    (project / "node_modules" / "dep").mkdir(parents=True)
    (project / "node_modules" / "dep" / "index.js").write_text("")
    (project / "__pycache__").mkdir()
    (project / "__pycache__" / "calc.cpython-311.pyc").write_bytes(b"stale")
    (project / "conftest.py").write_text("")  # untracked, not ignored: a file of the tree like any other
    manifest = integrity.Manifest()
    with scratch.scratch_copy(store.root, project, manifest, set(), []) as (copy, restored, missing):
        assert (copy / "_version.py").read_text() == "version = '1.0'\n"
        assert (copy / "node_modules").is_symlink() and (copy / "node_modules" / "dep" / "index.js").exists()
        assert not (copy / "__pycache__").exists() and not (copy / ".git").exists()
        assert (copy / "tests" / "test_calc.py").read_text() == TEST and (copy / "conftest.py").exists()
        assert restored == [] and missing == []
    assert not copy.exists()


def test_outside_git_the_folder_is_copied(store, tmp_path):
    project = tmp_path / "plain"
    (project / "tests").mkdir(parents=True)
    (project / "calc.py").write_text(CALC)
    (project / "tests" / "test_calc.py").write_text(TEST)
    (project / "tests" / "test_other.py").write_text("def test_other():\n    pass\n")
    goal = new(store, project)
    (project / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (project / "tests" / "test_calc.py").write_text(TEST.replace("== 5", "== -1"))
    guard = inspect(store, goal)
    assert guard.changed == ["tests/test_calc.py"] and guard.pristine.restored == ["tests/test_calc.py"]
    assert not guard.pristine.passed and guard.blocks
    (project / "tests" / "test_calc.py").unlink()  # a test gone: the census says so, no copy needed
    guard = inspect(store, goal)
    assert kinds(guard.issues) == [("test-gone", "tests.test_calc::test_add")] and guard.pristine is None
    assert "already refuses" in guard.pristine_note


def test_a_copy_over_the_size_limit_is_refused_with_what_to_do(store, project, monkeypatch):
    goal = new(store, project)
    (project / "tests" / "test_calc.py").write_text(TEST + "\n")
    (project / "fixtures.bin").write_bytes(b"\1" * (2 << 20))
    monkeypatch.setenv("GOAL_CONVERGENCE_PRISTINE_MAX_MB", "1")
    guard = inspect(store, goal)
    [issue] = guard.issues
    assert issue.kind == "pristine-unavailable" and "GOAL_CONVERGENCE_PRISTINE_MAX_MB" in issue.detail
    assert guard.blocks


def test_files_over_the_size_limit_are_watched_but_not_restorable(store, project, monkeypatch):
    monkeypatch.setattr(integrity, "MAX_FILE_BYTES", 10)
    goal = new(store, project)
    assert goal.baseline.unkept == ["tests/test_calc.py"] and "cannot be restored" in goal.baseline.note
    (project / "tests" / "test_calc.py").write_text("def test_add():\n    pass\n")
    guard = inspect(store, goal)
    assert [i.kind for i in guard.issues] == ["pristine-unavailable"]
    assert "revert it yourself" in guard.issues[0].detail


def test_a_baseline_edited_behind_our_back_is_caught_even_when_tests_may_change(store, project):
    # The goal file's own edits are the seal's (tests/storage/test_seal.py); the manifest is sealed too.
    goal = new(store, project, tests_may_change=True)
    path = store.root / "baselines" / f"{goal.goal_id}.json"
    doc = json.loads(path.read_text())
    doc["files"] = {}
    path.write_text(json.dumps(doc))
    guard = inspect(store, goal)
    assert [i.kind for i in guard.issues] == ["goal-tampered"] and "no longer matches" in guard.issues[0].detail
    assert not guard.enforced and guard.blocks


def test_tests_may_change_reports_but_does_not_block(store, project):
    goal = new(store, project, tests_may_change=True)
    (project / "calc.py").write_text("def add(a, b):\n    return a + b + 1\n")
    (project / "tests" / "test_calc.py").write_text(TEST.replace("== 5", "== 6"))
    guard = inspect(store, goal)
    assert guard.issues and not guard.blocks and not guard.enforced


def test_a_protect_pattern_that_matches_nothing_refuses_the_goal(store, project):
    with pytest.raises(InvalidInput, match="'spec/\\*\\*' matches no file"):
        new(store, project, protect=["spec/**"])
    goal = new(store, project, protect=["*.py"])
    (project / "helpers.py").write_text("")  # a new file a protected pattern covers counts as added
    assert inspect(store, goal).added == ["helpers.py"]


# ---- census comparison ------------------------------------------------------------------------------


def census(runner="pytest", **outcomes) -> Census:
    found = Census(runner=runner, ran=sum(o in ("passed", "failed", "xpassed") for o in outcomes.values()),
                   skipped=sum(o == "skipped" for o in outcomes.values()),
                   xfailed=sum(o == "xfailed" for o in outcomes.values()))
    return found.with_outcomes({f"t.py::{k}": v for k, v in outcomes.items()})


def kinds(issues) -> list[tuple[str, str]]:
    return [(i.kind, i.subject) for i in issues]


def test_a_test_that_ran_at_the_start_must_still_run():
    start = census(a="failed", b="failed", c="passed", d="skipped")
    now = census(a="skipped", b="xfailed", d="skipped", e="passed")
    assert kinds(integrity.compare(0, "pytest", start, start.outcomes, now)) == [
        ("test-skipped", "t.py::a"), ("test-xfailed", "t.py::b"), ("test-gone", "t.py::c")]


def test_counts_alone_still_catch_fewer_skipped_and_deselected_tests():
    start = Census(runner="unittest", ran=10, skipped=1, deselected=0)
    assert kinds(integrity.compare(0, "cmd", start, {}, Census(runner="unittest", ran=8, skipped=3, deselected=2))) == [
        ("test-deselected", "cmd"), ("test-skipped", "cmd"), ("fewer-tests", "cmd")]
    assert integrity.compare(0, "cmd", start, {}, Census(runner="unittest", ran=12, skipped=1)) == []


def test_a_census_that_disappears_is_a_replaced_runner():
    start = census(a="passed")
    assert kinds(integrity.compare(0, "pytest -q", start, start.outcomes, None)) == [("census-lost", "pytest -q")]
    counts_only = Census(runner="pytest", ran=1, passed=1)  # a fake pytest that prints a summary line
    lost = integrity.compare(0, "pytest -q", start, start.outcomes, counts_only)
    assert kinds(lost) == [("census-lost", "pytest -q")]


def test_issues_are_dated_from_the_first_iteration_that_had_them(store, project):
    goal = new(store, project)
    (project / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (project / "tests" / "test_calc.py").write_text(TEST.replace("== 5", "!= 5"))
    first = inspect(store, goal, number=1)
    goal.history.append(Iteration(number=1, started_at=now_iso(), ended_at=now_iso(),
                                  decision=Decision(action="continue"), integrity=first))
    assert {i.since for i in inspect(store, goal, number=2).issues} == {1}


def test_decide_never_converges_a_guarded_green_run_and_names_the_cheat(make_goal):
    guard = integrity.Integrity(changed=["tests/test_calc.py"], issues=[integrity.IntegrityIssue(
        kind="test-skipped", subject="tests/test_calc.py::test_add",
        detail="tests/test_calc.py::test_add ran at the start and is skipped now", since=2)])
    evidence = Evidence(conditions=[ConditionEvidence(index=0, type="test_pass", command="pytest", passed=True)],
                        tree_fingerprint="t", integrity=guard)
    goal = make_goal()
    goal.spent.iterations = 3
    decision = decide(goal, evidence, Verdict(converged=True))
    assert decision.action == "continue"
    assert "tests/test_calc.py::test_add ran at the start and is skipped now (since iteration 2)" in decision.hint
    assert "changed: tests/test_calc.py" in decision.hint
    guard.enforced = False
    assert decide(goal, evidence, Verdict(converged=True)).action == "converge"


# ---- where a refused run shows ------------------------------------------------------------------


def test_a_refused_run_shows_in_the_hint_status_ledger_and_triage(store, project):
    from click.testing import CliRunner

    from goal_convergence.cli.app import cli
    from goal_convergence.loop import engine

    goal = new(store, project, max_iterations=1)
    (project / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (project / "tests" / "test_calc.py").write_text(TEST.replace("== 5", "== -1"))
    outcome = engine.run_iteration(store, goal.goal_id, engine.MakerReport(summary="all tests pass"))
    assert (outcome.decision.action, outcome.decision.stop_reason) == ("stop", "ceiling")
    assert "with the original tests/test_calc.py" in outcome.decision.hint
    assert outcome.iteration.verdict is None  # no judge was asked: nothing it said could change this
    cli_runner = CliRunner()
    status = cli_runner.invoke(cli, ["status", goal.goal_id]).output
    assert "integrity: enforced" in status and "tests [0] at start: pytest: 1 ran (1 passed, 0 failed)" in status
    assert "changed: tests/test_calc.py" in status and "pristine re-run: FAILED" in status
    shown = cli_runner.invoke(cli, ["triage", "show", outcome.goal.escalation.triage_id]).output
    assert "pristine-failed" in shown and "changed: tests/test_calc.py" in shown and "at start: pytest" in shown
    ledger = runner.RunResult(outcome.goal, "ceiling").ledger()
    assert ledger["evidence"][0]["integrity"]["issues"][0]["kind"] == "pristine-failed"
    assert ledger["evidence"][0]["census"][0]["runner"] == "pytest"


def test_a_planted_compiled_module_is_removed_in_the_pristine_copy(store, project):
    """An ignored calc.pyc answers `import calc` for a buggy or missing calc.py: the copy drops it."""
    import py_compile

    (project / ".gitignore").write_text("__pycache__/\n*.pyc\n")
    git(project, "commit", "-qam", "ignore pyc")
    goal = new(store, project)
    py_compile.compile(str(project / "calc.py"), cfile=str(project / "calc.pyc"))
    (project / "calc.py").unlink()
    guard = inspect(store, goal)  # green: the bytecode stands in for the source
    assert guard.added == ["calc.pyc"] and guard.pristine.removed == ["calc.pyc"]
    assert not guard.pristine.passed and guard.blocks


def test_tests_that_could_not_even_be_collected_at_the_start_do_not_count_as_gone(store, project):
    """The objective is a module the tests import: at the start pytest reports a collection error,
    which is no test; once the module exists the tests run, and the goal may converge."""
    (project / "tests" / "test_shapes.py").write_text(
        "from shapes import area\n\n\ndef test_area():\n    assert area(2, 3) == 6\n")
    goal = new(store, project)
    assert (goal.baseline.census[0].ran, goal.baseline.census[0].ids) == (0, 0)  # collection stopped the run
    (project / "shapes.py").write_text("def area(w, h):\n    return w * h\n")
    guard = inspect(store, goal)
    assert guard.issues == [] and not guard.blocks


def test_a_submodule_is_in_the_copy(store, project, tmp_path):
    data = tmp_path / "data-repo"
    data.mkdir()
    git(data, "init", "-q", "-b", "main")
    (data / "cases.json").write_text("[1, 2]\n")
    git(data, "add", "-A")
    git(data, "commit", "-qm", "data")
    git(project, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(data), "vendor/data")
    git(project, "commit", "-qm", "add data")
    with scratch.scratch_copy(store.root, project, integrity.Manifest(), set(), []) as (copy, _, _):
        assert (copy / "vendor" / "data" / "cases.json").read_text() == "[1, 2]\n"
        assert (copy / ".gitmodules").exists()


def test_new_tests_that_are_skipped_or_deselected_are_no_loss():
    start = census(a="failed", b="passed")
    start.deselected = 0
    now = census(a="passed", b="passed", c="skipped", d="xfailed")
    now.deselected = 2  # new tests behind a marker the command leaves out
    assert integrity.compare(0, "pytest", start, start.outcomes, now) == []


def test_a_kept_blob_changed_on_disk_is_not_restored_as_the_start(store, project):
    """The pack holds the start's bytes under their sha256: bytes changed there read as missing, so the pristine
    copy says the file cannot be restored rather than restoring the changed bytes."""
    goal = new(store, project)
    manifest = integrity.load(store.root, goal.goal_id)
    pack = store.root / "baselines" / "blobs" / f"{goal.goal_id}.pack"
    pack.write_bytes(pack.read_bytes().replace(b"assert", b"pass  "))
    with scratch.scratch_copy(store.root, project, manifest, set(), ["tests/test_calc.py"], goal.goal_id) as (
            _, restored, missing):
        assert restored == [] and missing == ["tests/test_calc.py"]
