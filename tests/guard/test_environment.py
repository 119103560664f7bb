"""The runner's environment as part of the baseline, on a real throwaway virtualenv and a sample project."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path

import pytest

from goal_convergence.checks import conditions
from goal_convergence.goals import creation, specs
from goal_convergence.guard import environment, integrity, interpreter
from goal_convergence.models import Decision, Integrity, Iteration, now_iso
from goal_convergence.system import seal
from tests.conftest import git

CALC = "def add(a, b):\n    return a + b\n"
BUGGY = "def add(a, b):\n    return a - b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
# pytest as pip installs it, copied file by file from this interpreter's own, RECORD included (offline); its
# large dependencies are shared by every test's venv through a .pth file, as a venv made with
# --system-site-packages would share them.
PYTEST_DISTS, SHARED_DISTS = ("pytest", "pluggy", "iniconfig"), ("packaging", "pygments")
# A plugin that turns every failing test into a pass: the cheat a pytest11 entry point loads.
CHEAT = textwrap.dedent("""\
    import pytest


    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(item, call):
        outcome = yield
        report = outcome.get_result()
        if report.when == "call" and report.failed:
            report.outcome = "passed"
    """)


@pytest.fixture(autouse=True)
def no_bytecode(monkeypatch):
    """calc.py is rewritten within a second at the same size: Python would trust stale bytecode. The
    suite's conftest turns pytest's plugin autoload off; here the plugins are the point."""
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)


@pytest.fixture(scope="session")
def installed(tmp_path_factory) -> tuple[Path, Path]:
    """(what pip would put in site-packages for pytest, a folder with its shared dependencies), made once."""
    site, shared = tmp_path_factory.mktemp("site-packages"), tmp_path_factory.mktemp("shared")
    for folder, names in ((site, PYTEST_DISTS), (shared, SHARED_DISTS)):
        for name in names:
            for file in metadata.distribution(name).files or []:
                if not str(file).startswith(".."):
                    (folder / file).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(file.locate(), folder / file)
    return site, shared


@pytest.fixture
def venv(installed, tmp_path) -> Path:
    """Each test's own virtualenv with pytest in it (and its bin/pytest), to plant things in."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    shutil.copytree(installed[0], _site(venv), dirs_exist_ok=True)
    (_site(venv) / "shared.pth").write_text(f"{installed[1]}\n")
    script = venv / "bin" / "pytest"
    script.write_text(f"#!{venv}/bin/python\nimport sys\nfrom pytest import console_main\nsys.exit(console_main())\n")
    script.chmod(0o755)
    # As pip does: the RECORD lists the script it wrote, with that script's hash.
    digest = base64.urlsafe_b64encode(hashlib.sha256(script.read_bytes()).digest()).rstrip(b"=").decode()
    [record] = _site(venv).glob("pytest-*.dist-info/RECORD")
    lines = [f"../../../bin/pytest,sha256={digest},{script.stat().st_size}" if line.startswith("../../../bin/pytest,")
             else line for line in record.read_text().splitlines()]
    record.write_text("\n".join(lines) + "\n")
    return venv


@pytest.fixture
def project(tmp_path) -> Path:
    repo = tmp_path / "project"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text(CALC)
    (repo / "conftest.py").write_text("")  # puts the root on the path for a bin/pytest run too
    (repo / "tests" / "test_calc.py").write_text(TEST)
    (repo / ".gitignore").write_text("__pycache__/\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "calc")
    return repo


def _site(venv: Path) -> Path:
    return venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"


def _new(store, project: Path, venv: Path, command: str = "{venv}/bin/python -m pytest -q -p no:cacheprovider"):
    spec = specs.GoalSpec(objective="make the tests pass", project=project, test=command.format(venv=venv),
                          oracle_provider="conditions")
    return creation.new_goal(store, spec)


def _inspect(store, goal, number: int = 2) -> Integrity:
    found = conditions.run_conditions(goal.stopping_conditions, Path(goal.project_root))
    assert all(e.passed for e in found), [e.first_failure for e in found]  # every case here is a green run
    guard = integrity.inspect(store.root, goal, found, number, green=True)
    assert guard is not None
    return guard


def _env_issues(guard: Integrity) -> list:
    return [i for i in guard.issues if i.kind == "environment-changed"]


def _distribution(where: Path, name: str, module: str, source: str, entry_points: str = "") -> None:
    """What pip leaves for a one-module distribution: the module and its dist-info folder."""
    (where / f"{module}.py").write_text(source)
    info = where / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "RECORD").write_text(f"{module}.py,,\n{name}-1.0.dist-info/METADATA,,\n")
    if entry_points:
        (info / "entry_points.txt").write_text(entry_points)


def test_an_honest_run_records_the_runner_and_changes_nothing(store, project, venv):
    goal = _new(store, project, venv)
    manifest = integrity.load(store.root, goal.goal_id)
    assert manifest is not None and manifest.environment is not None
    [seen] = manifest.environment.interpreters
    assert seen.conditions == [0] and seen.command_path == f"{venv}/bin/python"
    assert {"pytest", "pluggy", "iniconfig"} <= set(seen.runner_dists) and seen.unverified == []
    assert f"{venv}/bin/pytest" in seen.runner
    assert any(path.endswith("_pytest/runner.py") for path in seen.runner)
    assert seen.pytest == {"rootdir": "./", "inifile": None}
    guard = _inspect(store, goal)
    assert guard.issues == [] and guard.notes == [] and guard.pristine is None
    # The live run moved nothing the stamp covers: the next iteration will not probe again.
    assert interpreter.stamp(seen.watched + list(seen.runner)) == seen.stamp


def test_a_pth_planted_in_site_packages_is_named_and_refused(store, project, venv):
    goal = _new(store, project, venv)
    (project / "calc.py").write_text(BUGGY)
    # A .pth runs its import lines at every start: this one asks pytest to load a plugin that hides failures.
    (_site(venv) / "green_plugin.py").write_text(CHEAT)
    (_site(venv) / "zz_fix.pth").write_text(
        "import os; os.environ['PYTEST_ADDOPTS'] = os.environ.get('PYTEST_ADDOPTS', '') + ' -p green_plugin'\n")
    guard = _inspect(store, goal)
    [issue] = _env_issues(guard)
    assert issue.subject.endswith("site-packages/zz_fix.pth") and "was added" in issue.detail
    assert "cannot be undone" in issue.detail and guard.blocks


def test_a_pytest_plugin_entry_point_in_site_packages_is_left_out_of_the_pristine_run(store, project, venv):
    goal = _new(store, project, venv)
    (project / "calc.py").write_text(BUGGY)
    _distribution(_site(venv), "pytest-green", "green_plugin", CHEAT, "[pytest11]\ngreen = green_plugin\n")
    guard = _inspect(store, goal)
    [issue] = _env_issues(guard)
    assert issue.subject == "pytest11:green" and "green_plugin" in issue.detail
    assert guard.pristine is not None and not guard.pristine.passed and guard.blocks
    assert any(i.kind == "pristine-failed" for i in guard.issues)


def test_a_harmless_new_plugin_passes_when_the_pristine_run_without_it_passes(store, project, venv):
    goal = _new(store, project, venv)
    _distribution(_site(venv), "pytest-quiet", "quiet_plugin", "def pytest_configure(config):\n    pass\n",
                  "[pytest11]\nquiet = quiet_plugin\n")
    guard = _inspect(store, goal)
    assert guard.pristine is not None and guard.pristine.passed
    assert guard.issues == [] and not guard.blocks
    assert any("pristine run passed without pytest11:quiet" in note for note in guard.notes)


def test_a_dist_info_in_the_project_that_registers_a_plugin_is_left_out_of_the_copy(store, project, venv):
    goal = _new(store, project, venv)
    (project / "calc.py").write_text(BUGGY)
    _distribution(project, "helpers", "helpers_plugin", CHEAT, "[pytest11]\nhelpers = helpers_plugin\n")
    guard = _inspect(store, goal)
    [issue] = _env_issues(guard)
    assert issue.subject == "helpers-1.0.dist-info" and "helpers" in issue.detail
    assert "helpers-1.0.dist-info/entry_points.txt" in guard.pristine.removed
    assert not guard.pristine.passed and guard.blocks


def test_an_edited_pytest_file_is_found_through_its_record(store, project, venv):
    goal = _new(store, project, venv, command="{venv}/bin/pytest -q -p no:cacheprovider")
    runner = _site(venv) / "_pytest" / "runner.py"
    runner.write_text(runner.read_text() + "\n# nothing to see here\n")
    guard = _inspect(store, goal)
    [issue] = _env_issues(guard)
    assert issue.subject.endswith("_pytest/runner.py") and "edited" in issue.detail and guard.blocks


def test_a_plain_install_of_an_unrelated_package_is_a_note_only(store, project, venv):
    goal = _new(store, project, venv)
    _distribution(_site(venv), "leftpad", "leftpad", "def pad(s, n):\n    return s.rjust(n)\n")
    guard = _inspect(store, goal)
    assert guard.issues == [] and not guard.blocks
    assert any("leftpad 1.0" in note for note in guard.notes)


def test_a_goal_made_before_the_environment_was_recorded_says_so_once(store, project, venv):
    goal = _new(store, project, venv)
    path = store.root / "baselines" / f"{goal.goal_id}.json"
    doc = json.loads(path.read_text())
    del doc["environment"], doc["seal"]
    path.write_text(seal.seal(store.root, f"baselines/{path.name}", doc))  # as an older version sealed it
    guard = _inspect(store, goal)
    assert guard.notes == [environment.NOT_RECORDED_NOTE] and not guard.blocks
    stamp = now_iso()
    goal.history.append(Iteration(number=2, started_at=stamp, ended_at=stamp, integrity=guard,
                                  decision=Decision(action="continue")))
    assert _inspect(store, goal, number=3).notes == []


def test_the_first_word_is_followed_as_the_shell_would(tmp_path, venv):
    env = {"PATH": f"{venv}/bin{os.pathsep}{os.environ['PATH']}"}
    python = venv / "bin" / "python"
    assert interpreter.resolve("pytest -q", tmp_path, env) == (python, venv / "bin" / "pytest")
    assert interpreter.resolve("FOO=1 env python -m pytest", tmp_path, env) == (python, None)
    wrapped = tmp_path / "long"
    wrapped.write_text(f"#!/bin/sh\n'''exec' \"{python}\" \"$0\" \"$@\"\n' '''\nimport sys\n")
    wrapped.chmod(0o755)
    assert interpreter.resolve("./long", tmp_path, env) == (python, wrapped)
    assert "environment of its own" in interpreter.resolve("uv run pytest", tmp_path, env)
    assert "not a Python" in interpreter.resolve("make test", tmp_path, env)
