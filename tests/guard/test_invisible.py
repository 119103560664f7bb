"""Nothing check-sensitive is invisible to the guard: runner-loaded files in ignored or excluded folders,
bytecode, and modules that shadow the package under test from any folder the runner puts on sys.path.

Each cheat is real (the live run is green with the bug still there) and refused; each honest change
next to it goes through."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from goal_convergence.checks import conditions
from goal_convergence.goals import creation, specs
from goal_convergence.guard import integrity, protect, syspath
from tests.conftest import git

BROKEN = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"
# A hook any collected conftest.py applies to the whole session: every test passes without running.
PASS_ALL = "def pytest_collection_modifyitems(items):\n    for item in items:\n        item.runtest = lambda: None\n"


@pytest.fixture(autouse=True)
def no_bytecode(monkeypatch):
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")


def repo(root: Path, files: dict[str, str]) -> Path:
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "start")
    return root


@pytest.fixture
def project(tmp_path) -> Path:
    return repo(tmp_path / "project", {"calc.py": BROKEN, "tests/test_calc.py": TEST,
                                       ".gitignore": "generated/\ntarget/\n"})


def write(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text)


def new(store, project: Path, test: str = PYTEST):
    spec = specs.GoalSpec(objective="make the tests pass", project=project, test=test, oracle_provider="conditions")
    return creation.new_goal(store, spec)


def inspect(store, goal):
    """The guard after a real run of the goal's conditions, which must be green (the cheat is real)."""
    found = conditions.run_conditions(goal.stopping_conditions, Path(goal.project_root))
    assert all(e.passed for e in found), [e.first_failure for e in found]
    return integrity.inspect(store.root, goal, found, 2, green=True)


def refused(guard, rel: str) -> bool:
    return guard.blocks and rel in guard.added and rel in guard.pristine.removed and not guard.pristine.passed


# ---- runner-loaded files in ignored and excluded folders ------------------------------------------


@pytest.mark.parametrize("rel", ["generated/conftest.py", "target/conftest.py", "scratch/conftest.py"],
                         ids=["ignored-folder", "ignored-build-output", "excluded-folder"])
def test_a_conftest_in_an_ignored_folder_pytest_collects_is_seen_and_removed(store, project, rel):
    (project / ".git" / "info" / "exclude").write_text("scratch/\n")
    goal = new(store, project)
    write(project, rel, PASS_ALL)
    assert git(project, "status", "--porcelain") == ""  # git does not see it
    assert refused(inspect(store, goal), rel)


def test_an_honest_fix_beside_ignored_build_output_and_data_converges(store, project):
    goal = new(store, project)
    write(project, "calc.py", FIXED)
    write(project, "target/debug/calc.o", "object code")
    write(project, "target/lib/helper.py", "x = 1\n")  # build output: not something a runner loads
    write(project, "generated/notes.txt", "data")
    guard = inspect(store, goal)
    assert guard.added == [] and not guard.blocks


# ---- bytecode ------------------------------------------------------------------------------------


def test_bytecode_the_tests_write_is_no_finding(store, project, monkeypatch):
    goal = new(store, project)
    write(project, "calc.py", FIXED)
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE")
    subprocess.run(PYTEST, shell=True, cwd=project, check=True, capture_output=True)  # as a maker runs them
    assert list(project.rglob("__pycache__/*.pyc"))  # untracked, not ignored
    guard = inspect(store, goal)
    assert guard.added == [] and guard.issues == [] and "not needed" in guard.pristine_note


def test_a_sourceless_module_outside_pycache_stays_check_sensitive():
    assert protect.sensitive(["calc.pyc", "pkg/__pycache__/calc.cpython-311.pyc"], []) == ["calc.pyc"]


# ---- shadow modules ------------------------------------------------------------------------------


@pytest.mark.parametrize(("files", "test", "shadow"), [
    # pytest puts qa/ (a test folder with no __init__.py) first on sys.path
    ({"qa/test_calc.py": TEST}, f"{PYTEST} qa", "qa/calc.py"),
    # the pythonpath option puts lib/ first
    ({"tests/test_calc.py": TEST, "lib/README": "x\n",
      "pyproject.toml": '[tool.pytest.ini_options]\npythonpath = ["lib"]\n'}, PYTEST, "lib/calc.py"),
    # a package beside the tests
    ({"checks/test_calc.py": TEST}, PYTEST, "checks/calc/__init__.py"),
], ids=["test-folder", "pythonpath", "package"])
def test_a_module_shadowing_the_package_under_test_is_removed(store, tmp_path, files, test, shadow):
    project = repo(tmp_path / "project", {"calc.py": BROKEN, **files})
    goal = new(store, project, test)
    write(project, shadow, FIXED)
    assert refused(inspect(store, goal), shadow)


def test_a_new_helper_beside_the_tests_and_the_fix_converge(store, tmp_path):
    project = repo(tmp_path / "project", {"calc.py": BROKEN, "qa/test_calc.py": TEST})
    goal = new(store, project, f"{PYTEST} qa")
    write(project, "calc.py", FIXED)
    write(project, "qa/numbers.py", "TWO = 2\n")
    write(project, "qa/test_numbers.py", "from numbers import Number\n\n\ndef test_n():\n    assert Number\n")
    guard = inspect(store, goal)
    assert "qa/numbers.py" in guard.added  # it shadows the standard library's numbers: seen, removed
    assert not guard.blocks  # and the original tests still pass without it


def test_the_project_s_own_modules_are_not_shadows_where_it_defines_them():
    own = syspath.own_modules(["pydantic.py", "src/pkg/__init__.py", "setup.py", "test_x.py", "tests/test_a.py"])
    assert own == ["pydantic", "src/pkg/"]
    where = syspath.view(None, ["pydantic.py", "tests/test_a.py"], own)
    # named like an installed distribution, but it is the package under test
    assert not where.shadows("pydantic.py") and not where.shadows("src/pkg/__init__.py")
    assert where.shadows("tests/pydantic.py") and where.shadows("pkg.py")
    # the other form beside the project's own: a package is imported before the module of its name
    assert where.shadows("pydantic/__init__.py") and where.shadows("src/pkg.py")
    assert protect.check_defining(Path("/nonexistent"), ["pydantic.py", "tests/test_a.py"], [], []) == [
        "tests/test_a.py"]


def test_the_runner_puts_the_first_folder_above_each_test_without_init_on_the_path(tmp_path):
    files = ["qa/test_a.py", "pkg/__init__.py", "pkg/tests/__init__.py", "pkg/tests/test_b.py",
             "deep/sub/conftest.py", "docs/index.md"]
    (tmp_path / "pytest.ini").write_text("[pytest]\npythonpath = ./lib extra/ /abs ../up\n")
    where = syspath.view(tmp_path, files)
    assert where.folders == {"", "src/", "qa/", "deep/sub/", "lib/", "extra/"}
    assert not where.shadows("pkg/json.py")  # a package's own submodule named like the standard library
    assert where.shadows("qa/json.py") and where.shadows("extra/pytest.py")
