"""`goal new` reads each check-defining file once, and leaves its digest where the goal's first iteration finds it."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from goal_convergence.goals import creation, specs
from goal_convergence.guard import integrity
from goal_convergence.vcs import filehash, snapshot
from tests.conftest import git

_opened: list[list[str]] = []
_lock = threading.Lock()


def _audit(event: str, args: tuple) -> None:
    if event == "open" and _opened and isinstance(args[0], (str, bytes, os.PathLike)):
        with _lock:
            for seen in _opened:
                seen.append(os.path.abspath(os.fsdecode(args[0])))


sys.addaudithook(_audit)  # hooks cannot be removed: this one is inert unless ``opened`` is listening


@contextmanager
def opened() -> Iterator[list[str]]:
    """The paths this process opens inside (os.open and open both raise the ``open`` audit event)."""
    seen: list[str] = []
    _opened.append(seen)
    try:
        yield seen
    finally:
        _opened.remove(seen)


def test_the_first_iteration_reads_only_the_check_files_that_moved_since_goal_new(git_repo, store):
    tests = git_repo / "tests"
    tests.mkdir()
    for i in range(3):
        (tests / f"test_m{i}.py").write_text(f"def test_{i}():\n    assert True\n")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-qm", "tests")
    time.sleep(filehash.RACY_SECONDS + 1.5)  # old enough that their stat data (and the index's) vouches for them
    spec = specs.GoalSpec(objective="keep the tests", project=git_repo, checks=["true"], oracle_provider="conditions")
    with opened() as made:
        goal = creation.new_goal(store, spec)
    watched = sorted(str(git_repo / "tests" / f"test_m{i}.py") for i in range(3))
    assert sorted(set(made) & set(watched)) == watched  # read as the goal began, each once
    assert [made.count(path) for path in watched] == [1, 1, 1], made

    filehash._cache.clear()  # the iteration is another process: it knows only what the goal's session kept
    (tests / "test_m1.py").write_text("def test_1():\n    assert 1\n")  # its stat data moves: read again
    root = Path(goal.project_root)
    with snapshot.session(root, snapshot.state_path(store.root, goal.goal_id, root)), opened() as iteration:
        report = integrity.inspect(store.root, goal, [], 1, green=False)
    assert report is not None and report.changed == ["tests/test_m1.py"]
    assert sorted(set(iteration) & set(watched)) == [str(git_repo / "tests" / "test_m1.py")]
