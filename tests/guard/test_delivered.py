"""The tree a green run checked is the tree at the end of the run: a process that swaps the fixed file in
only while the checks run is caught by the files' ctime, and the goal does not converge."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from goal_convergence.goals import creation, specs
from goal_convergence.guard import delivered
from goal_convergence.loop import engine, makers, runner
from goal_convergence.vcs import snapshot
from tests.conftest import git

BROKEN = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
# The pause gives the swapper, which polls /proc for the condition's shell, time to swap before pytest
# imports calc.
CHECK = f"sleep 1; {sys.executable} -m pytest -q -p no:cacheprovider"
# Swaps calc.py while the condition's shell (or the pytest it execs) runs in the project, and back once none is left; writes its pid
# first and each swap to its log. It ends by itself after its time is up.
SWAPPER = r'''
import os, pathlib, sys, time

project, log, seconds = pathlib.Path(sys.argv[1]).resolve(), pathlib.Path(sys.argv[2]), float(sys.argv[3])
# The fix is longer than the broken line: Python trusts bytecode by a source's size and whole-second mtime,
# so a swap of the same size within a second could run the bytecode of the broken file.
FIXED, BROKEN = "def add(a, b):\n    return a + b  # fixed\n", "def add(a, b):\n    return a - b\n"
log.write_text(f"{os.getpid()}\n")


def checking():
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            line = open(f"/proc/{pid}/cmdline", "rb").read()
            ours = b"\0sleep 1; " in line or line.endswith(b"-m\0pytest\0-q\0-p\0no:cacheprovider\0")
            if ours and os.readlink(f"/proc/{pid}/cwd") == str(project):
                return True
        except OSError:
            pass
    return False


end = time.time() + seconds
while time.time() < end:
    if checking():
        (project / "calc.py").write_text(FIXED)
        with log.open("a") as f:
            f.write("in\n")
        while checking() and time.time() < end:
            time.sleep(0.002)
        (project / "calc.py").write_text(BROKEN)
        with log.open("a") as f:
            f.write("out\n")
    # Each look walks /proc: done every 2 ms it would keep a core busy for the whole test. The check's shell
    # sleeps a second before pytest starts, so a look every 20 ms still swaps in time.
    time.sleep(0.02)
'''


@pytest.fixture(autouse=True)
def no_bytecode(monkeypatch):
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "project"
    (root / "tests").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "calc.py").write_text(BROKEN)
    (root / "tests" / "test_calc.py").write_text(TEST)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "start")
    return root


@pytest.fixture
def swapper(tmp_path):
    """(the command line that starts the swapper for a project, its log); the swapper is killed, by its pid, after
    the test."""
    script, log = tmp_path / "swapper.py", tmp_path / "swapper.log"
    script.write_text(SWAPPER)
    yield (lambda project: f"{shlex.quote(sys.executable)} {shlex.quote(str(script))} {shlex.quote(str(project))} "
                           f"{shlex.quote(str(log))} 60"), log
    if log.exists():
        try:
            os.kill(int(log.read_text().split()[0]), signal.SIGKILL)
        except (ProcessLookupError, ValueError, IndexError):
            pass


def new(store, project: Path):
    spec = specs.GoalSpec(objective="make the tests pass", project=project, test=CHECK,
                          oracle_provider="conditions", max_iterations=1)
    return creation.new_goal(store, spec)


def started(log: Path) -> None:
    for _ in range(500):
        if log.exists() and log.read_text().strip():
            return
        time.sleep(0.01)
    raise AssertionError("the swapper did not start")


def test_a_file_swapped_in_only_while_the_checks_run_is_caught(store, project, swapper):
    command, log = swapper
    goal = new(store, project)
    process = subprocess.Popen(command(project), shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started(log)
    outcome = engine.run_iteration(store, goal.goal_id, engine.MakerReport(summary="fixed add()"))
    record = outcome.iteration
    assert (project / "calc.py").read_text() == BROKEN  # the tree delivered
    assert outcome.decision.action == "continue" and outcome.goal.state == "active"
    assert "in\n" in log.read_text()  # the cheat is real: the checks saw the fixed file
    # Each green run was checked again; the swapper may swap back while the next run imports (red then).
    assert sum("re-checking" in n for n in outcome.decision.notes) >= 1
    if all(c.passed for c in record.conditions):
        [issue] = record.integrity.issues
        assert (issue.kind, issue.subject) == ("files-moved", "calc.py") and record.integrity.blocks
        assert "calc.py changed while the checks ran" in outcome.decision.hint
    process.kill()  # it would swap on for its whole minute; the fixture ends the swapper itself too
    process.wait()


def test_a_maker_that_leaves_a_swapper_behind_does_not_converge(store, project, swapper):
    """The headless maker starts the swapper with nohup and ends its turn: whether the swapper outlives the
    turn or not, no green run converges, and every green run names the file that moved."""
    command, log = swapper
    goal = new(store, project)
    maker = makers.CommandMaker(f"nohup {command(project)} >/dev/null 2>&1 &")
    result = runner.run_goal(store, goal.goal_id, maker)
    assert result.stop != "converged" and result.goal.state != "converged"
    greens = [it for it in result.goal.history if all(c.passed for c in it.conditions)]
    assert all(it.integrity.issues[0].kind == "files-moved" for it in greens)
    # green only if the swapper swapped; `goal run` ends the maker's tree with its turn, so it may never start
    assert greens or not log.exists() or "in\n" not in log.read_text()


def test_an_honest_fix_converges(store, project):
    goal = new(store, project)
    (project / "calc.py").write_text(FIXED)
    outcome = engine.run_iteration(store, goal.goal_id, engine.MakerReport(summary="fixed add()"))
    assert outcome.decision.action == "converge" and outcome.goal.state == "converged"


def test_the_files_written_added_or_deleted_while_the_checks_ran_are_named(project):
    (project / "gone.py").write_text("x = 1\n")
    (project / "tests" / "test_calc.py").unlink()  # tracked, deleted by the maker before the checks: no move
    moved = delivered.watch(project)
    assert moved() == []
    (project / "calc.py").write_text(BROKEN)  # the same content again: only the ctime tells
    (project / "gone.py").unlink()
    (project / ".coverage").write_text("data")  # a condition's own output
    (project / "target" / "debug").mkdir(parents=True)
    (project / "target" / "debug" / "calc.o").write_text("build output")
    (project / "report.xml").write_text("<testsuites/>")  # a report a test wrote: not code
    (project / "planted.py").write_text("x = 2\n")  # code that appeared while the checks ran
    assert moved() == ["calc.py", "gone.py", "planted.py"]


def test_in_a_goals_session_the_watch_begins_without_writing_its_index(project, tmp_path):
    state = tmp_path / "home" / "indexes" / "goal-w"
    with snapshot.session(project, state):
        snapshot.take(project).ids  # noqa: B018 - the goal's index, as the iteration before left it
        kept = state.stat()
        (project / "calc.py").write_text(FIXED)  # the maker's edits, before the checks
        (project / "notes.txt").write_text("not code")
        moved = delivered.watch(project)
        assert state.stat().st_ctime_ns == kept.st_ctime_ns  # listed, not hashed: git wrote nothing yet
        assert moved() == []  # hashed as the checks end, the maker's edits are not taken for the checks'
        (project / "notes.txt").write_text("rewritten by a check")
        (project / "tests" / "test_calc.py").unlink()
        assert moved() == ["notes.txt", "tests/test_calc.py"]
        assert state.stat().st_ctime_ns != kept.st_ctime_ns


def test_a_file_written_the_moment_the_watch_begins_is_named(project):
    # On a kernel that stamps ctimes from its coarse clock, a write within a tick of the precise time the watch
    # began would bear an earlier ctime; each of these is written right away.
    for n in range(50):
        moved = delivered.watch(project)
        (project / "calc.py").write_text(f"{BROKEN}# {n}\n")
        assert moved() == ["calc.py"]


def test_the_watch_begins_after_every_write_before_it_and_before_every_write_after_it(tmp_path):
    for _ in range(100):
        (tmp_path / "before").write_text("x")
        began = delivered.began_ns()
        (tmp_path / "after").write_text("x")
        assert (tmp_path / "before").stat().st_ctime_ns < began <= (tmp_path / "after").stat().st_ctime_ns
