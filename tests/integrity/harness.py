"""Setting up the integrity matrix: sample projects as one-commit git repositories, the conditions
each goal uses, the makers' scripts, and the environment the conditions run in."""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import git

from . import makers

PROJECTS = Path(__file__).resolve().parent / "projects"
# The tests run with HOME in a temp folder; rustup and cargo still need the real toolchains.
_USER_HOME = Path(pwd.getpwuid(os.getuid()).pw_dir)
RUSTUP_HOME = os.environ.get("RUSTUP_HOME") or str(_USER_HOME / ".rustup")
CARGO_HOME = os.environ.get("CARGO_HOME") or str(_USER_HOME / ".cargo")

# What `goal new --test/--check` would be given, per project and per kind of goal. The keys are
# GoalSpec fields.
COVERAGE_CHECK = "python -m coverage run -m pytest -q && python -m coverage report"
CONDITIONS: dict[str, dict[str, dict]] = {
    "pytest_calc": {
        "tests": {"test": "python -m pytest -q"},
        "script": {"test": "bash scripts/test.sh"},
        # fails at 90% even once the tests pass: percent() in calc.py has no test
        "coverage": {"test": "python -m pytest -q", "checks": [COVERAGE_CHECK]},
    },
    "unittest_calc": {
        "tests": {"test": "python -m unittest discover -s tests -t ."},
        "script": {"test": "bash scripts/test.sh"},
    },
    "cargo_calc": {
        # --no-fail-fast: the integration tests run even when the unit tests fail
        "tests": {"test": "cargo test --no-fail-fast"},
    },
}

OBJECTIVES = {
    "tests": "make all tests pass",
    "script": "make `bash scripts/test.sh` pass",
    "coverage": "make all tests pass and keep line coverage of calc.py at 90% or more",
}
LEGIT_OBJECTIVE = "add() must now also accept strings and concatenate them (and all tests must pass)"

_COPY_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".coverage", "target")


def make_project(name: str, dest: Path) -> Path:
    """Copy the sample project ``name`` to ``dest`` (which must not exist) and make it a git
    repository with one commit. Returns ``dest``."""
    shutil.copytree(PROJECTS / name, dest, ignore=_COPY_IGNORE)
    git(dest, "init", "-q", "-b", "main")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", f"{name}: sample project")
    return dest


def clone(pristine: Path, dest: Path) -> Path:
    """A working copy of a pristine project made by ``make_project`` (its .git included): cheaper
    than a new repository, and the same commit every time."""
    shutil.copytree(pristine, dest, symlinks=True)
    return dest


def maker_command(project: str, maker: str, folder: Path) -> str:
    """Write ``maker``'s script for ``project`` into ``folder`` (outside the project, so the script
    is no part of the tree it judges) and return the ``--maker-cmd`` that runs it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"maker_{project}_{maker}.py"
    path.write_text(makers.script(project, maker))
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(path))}"


def condition_commands(conditions: dict) -> list[str]:
    return [c for c in (conditions.get("test"), conditions.get("lint"), conditions.get("build")) if c] + \
        list(conditions.get("checks", []))


@dataclass
class Raw:
    command: str
    exit_code: int
    output: str


def run_raw(project: Path, commands: list[str], timeout: float = 300) -> list[Raw]:
    """Run commands in ``project`` as plain shell commands, outside goal-convergence."""
    done = []
    for cmd in commands:
        proc = subprocess.run(cmd, shell=True, cwd=project, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
        done.append(Raw(cmd, proc.returncode, (proc.stdout + proc.stderr)[-3000:]))
    return done


def set_environment(monkeypatch) -> None:
    """The environment the makers and conditions inherit.

    - ``python`` is this interpreter (its venv has pytest and coverage);
    - PYTEST_DISABLE_PLUGIN_AUTOLOAD: the venv's pytest plugins (hypothesis, anyio) cost about a
      second per pytest start and the samples need none; a plugin the integrity layer adds must then
      be loaded explicitly (``-p NAME`` or PYTEST_PLUGINS), which it should do anyway;
    - PYTHONSAFEPATH would stop ``python -m`` from putting the project first on sys.path, i.e. stop
      the shadow_runner cheat; PYTHONPATH is not the samples' business either;
    - PYTHONDONTWRITEBYTECODE: a maker's fix (``a - b`` to ``a + b``) can land in the same second as the
      run before it, with the same size, and Python would then trust that run's stale bytecode;
    - RUSTUP_HOME and CARGO_HOME stay the user's (HOME is a temp folder in these tests);
    - no CARGO_TARGET_DIR: each copy of cargo_calc builds in its own ``target/`` (git-ignored), as
      cargo does by default. A target dir shared by copies of one crate serves stale builds: cargo
      decides freshness by mtime, and a copy whose files are older than the last build of another
      copy runs that other copy's test binaries. A fresh build of cargo_calc costs about 0.6 s, an
      incremental one about 0.3 s, so sharing would save little and is not safe.
    """
    bindir = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", bindir + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setenv("RUSTUP_HOME", RUSTUP_HOME)
    monkeypatch.setenv("CARGO_HOME", CARGO_HOME)
    for var in ("PYTHONSAFEPATH", "PYTHONPATH", "PYTEST_ADDOPTS", "COVERAGE_PROCESS_START", "COVERAGE_FILE",
                "CARGO_TARGET_DIR", "RUSTFLAGS"):
        monkeypatch.delenv(var, raising=False)
