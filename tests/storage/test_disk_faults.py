"""A full disk and a read-only home, for real (a small tmpfs: tests/diskfaults.py): every write that fails
says which file and what to do, with its own exit code (73 may not write, 74 no room), never "an unexpected
failure"; and every command that only reads works in a home it may not write."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

EXIT_CANTCREAT, EXIT_IOERR = 73, 74  # sysexits: may not create, I/O error (cli/app.py)
from goal_convergence.goals import triage
from goal_convergence.models import Goal
from tests.conftest import run_goal
from tests.diskfaults import small_disk


@pytest.fixture
def disk(gc_home):
    with small_disk(gc_home) as mounted:
        yield mounted


@pytest.fixture
def escalated(disk, store, make_goal, git_repo):
    """A goal escalated with its triage item, in the home on the small disk."""
    goal = store.create(make_goal(project_root=str(git_repo)))
    now = datetime.now(UTC)
    goal = store.update(Goal, goal.goal_id, lambda g: triage.escalate(g, "ceiling", None, "spent", now))
    triage.file_escalation(store, goal, now)
    return goal


def _says_what_to_do(done, code: int, cause: str, home) -> None:
    assert done.returncode == code, (done.returncode, done.stderr)
    assert cause in done.stderr and str(home) in done.stderr, done.stderr
    assert "unexpected" not in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_goal_new_on_a_full_disk_names_the_file_and_what_to_do(disk, git_repo, gc_home):
    disk.fill()
    done = run_goal(git_repo, "new", "make it pass", "--check", "true", "--oracle", "conditions")
    _says_what_to_do(done, EXIT_IOERR, "No space left on device", gc_home)
    assert "free some space" in done.stderr
    disk.room()  # with room again, the same command works: nothing was left half-made
    done = run_goal(git_repo, "new", "make it pass", "--check", "true", "--oracle", "conditions")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("command", [["pause"], ["abandon"], ["resume", "--max-iterations", "30"]])
def test_a_change_in_a_read_only_home_says_so(escalated, disk, git_repo, gc_home, command):
    disk.readonly()
    done = run_goal(git_repo, command[0], escalated.goal_id, *command[1:])
    if done.returncode == 65:  # a move the state does not allow is refused before any write
        return
    _says_what_to_do(done, EXIT_CANTCREAT, "Read-only file system", gc_home)


@pytest.mark.parametrize("command", [["list"], ["list", "--all"], ["status", "{goal}"], ["status", "{goal}", "--json"],
                                     ["report", "{goal}"], ["triage", "list"], ["triage", "show", "{item}"],
                                     ["triage", "list", "--json"]])
def test_reads_work_in_a_read_only_home(escalated, disk, git_repo, command):
    item = escalated.escalation.triage_id
    disk.readonly()
    done = run_goal(git_repo, *[a.format(goal=escalated.goal_id, item=item) for a in command])
    assert done.returncode == 0, done.stderr
    assert escalated.goal_id in done.stdout or item in done.stdout or "report" in done.stdout, done.stdout


def test_reads_work_in_a_read_only_home_whose_index_is_stale(escalated, disk, git_repo, gc_home):
    """The index and the session bindings are kept by the commands that can write; the others read around them."""
    import shutil

    (gc_home / "goals" / "index.json").unlink()
    shutil.rmtree(gc_home / "goals" / "sessions", ignore_errors=True)
    disk.readonly()
    for command in (["list"], ["status", escalated.goal_id], ["triage", "list"]):
        done = run_goal(git_repo, *command)
        assert done.returncode == 0 and escalated.goal_id in done.stdout, (command, done.stderr)
