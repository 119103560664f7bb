"""The conditions run with a bytecode folder of our own: bytecode planted in the project is never read."""

from __future__ import annotations

import os
import py_compile
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from goal_convergence.checks import conditions, pycache
from goal_convergence.models import StoppingCondition

BROKEN = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"  # the same size: only the bytes differ
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    monkeypatch.delenv(pycache.ENV, raising=False)
    root = tmp_path / "project"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_calc.py").write_text(TEST)
    (root / "calc.py").write_text(BROKEN)
    for path in (root / "calc.py", root / "tests" / "test_calc.py"):  # not just changed: their bytecode is kept
        os.utime(path, (time.time() - 100, time.time() - 100))
    return root


def plant_fixed_bytecode(root: Path) -> None:
    """Bytecode of the fixed calc.py where Python looks for it, stamped with the broken source's mtime and
    size, so a plain Python run trusts it over the source."""
    source = root / "calc.py"
    stat = source.stat()
    source.write_text(FIXED)
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    tag = sys.implementation.cache_tag
    py_compile.compile(str(source), cfile=str(root / "__pycache__" / f"calc.{tag}.pyc"))
    source.write_text(BROKEN)
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def run(root: Path):
    return conditions.run_conditions([StoppingCondition(type="test_pass", command=PYTEST)], root)[0]


def test_planted_bytecode_in_pycache_is_never_read(project):
    plant_fixed_bytecode(project)
    plain = subprocess.run(PYTEST, shell=True, cwd=project, capture_output=True, text=True)
    assert plain.returncode == 0, plain.stdout  # the cheat is real: Python alone trusts the planted bytecode
    found = run(project)
    assert not found.passed and found.failed_tests == ["tests.test_calc::test_add"]


def test_the_project_gets_no_bytecode_our_folder_does(project):
    assert not run(project).passed
    folder = pycache.folder(project)
    # pytest's rewritten test modules too: its assertion rewriting honours the prefix
    assert list(folder.rglob("calc.*.pyc")) and list(folder.rglob("test_calc.*pytest*.pyc"))
    assert not list(project.rglob("__pycache__"))
    project.joinpath("calc.py").write_text(FIXED)  # an honest fix, from the same folder
    assert run(project).passed


def test_bytecode_of_a_source_changed_within_the_second_is_not_kept(project):
    """Python trusts bytecode by its source's size and mtime in whole seconds: a fix of the same size
    within the same second as the last run would run the old code."""
    stamp = time.time() + 60  # the same second for both versions, whenever the runs end
    os.utime(project / "calc.py", (stamp, stamp))
    assert not run(project).passed
    project.joinpath("calc.py").write_text(FIXED)
    os.utime(project / "calc.py", (stamp, stamp))
    assert run(project).passed


def test_a_folder_someone_else_wrote_to_is_wiped_before_the_next_run(project):
    run(project)
    folder = pycache.folder(project)
    [kept] = list(folder.rglob("test_calc.*.pyc"))
    inode = kept.stat().st_ino
    run(project)
    assert kept.stat().st_ino == inode  # our own last state: reused, not compiled again
    planted = folder / "planted.pyc"
    planted.write_bytes(b"not ours")
    # Held open, the wiped file keeps its inode: the file that replaces it cannot be handed the same number.
    with kept.open("rb"):
        run(project)
        assert not planted.exists() and kept.stat().st_ino != inode  # wiped, then filled again


def test_a_copy_of_the_project_drops_its_bytecode_after_the_run(project, tmp_path):
    copy = Path(shutil.copytree(project, tmp_path / "copy" / "project"))
    conditions.run_conditions([StoppingCondition(type="test_pass", command=PYTEST)], copy, bytecode_of=project)
    folder = pycache.folder(project)
    assert list(folder.rglob("test_calc.*.pyc")) == []  # the copy's are gone; the project never ran
    assert not (folder / str(tmp_path.resolve()).lstrip("/")).exists()  # no empty folders left either
    assert list(folder.rglob("*.pyc")) and not pycache.folder(copy).exists()  # pytest's own bytecode stays
