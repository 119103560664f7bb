"""The record of makers at work: a process whose ancestor runs a maker is inside it, whatever its depth."""

from __future__ import annotations

import os
import subprocess
import sys

from goal_convergence.system import insiders

ASK = "import sys; from pathlib import Path; from goal_convergence.system import insiders; " \
      "print(insiders.inside(Path(sys.argv[1])))"


def _ask(home, *, shell: bool = False, env=None) -> str:
    argv = [sys.executable, "-c", ASK, str(home)]
    if shell:  # a grandchild, as a maker's shell would start it
        argv = ["sh", "-c", " ".join(f"'{a}'" for a in argv)]
    return subprocess.run(argv, capture_output=True, text=True, check=True, env=env).stdout.strip()


def test_a_child_and_a_grandchild_of_a_maker_are_inside_it(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != insiders.ENV}
    with insiders.working(tmp_path, "goal-abcdefgh") as path:
        assert path is not None and path.read_text() == "goal-abcdefgh"
        assert _ask(tmp_path, env=env) == "goal-abcdefgh"
        assert _ask(tmp_path, shell=True, env=env) == "goal-abcdefgh"
        assert insiders.inside(tmp_path, os.getpid()) is None  # the maker's runner itself is not its own maker
    assert _ask(tmp_path, env=env) == "None"
    assert list((tmp_path / insiders.MAKERS).iterdir()) == []


def test_a_stale_record_never_matches_and_is_swept(tmp_path):
    folder = tmp_path / insiders.MAKERS
    folder.mkdir()
    parent = os.getpid()
    (folder / f"{parent}-1").write_text("goal-zzzzzzzz")  # this pid, but another start time: a reused pid
    env = {k: v for k, v in os.environ.items() if k != insiders.ENV}
    assert _ask(tmp_path, env=env) == "None"
    insiders.register(tmp_path, parent, "goal-abcdefgh")
    assert sorted(p.name for p in folder.iterdir()) == [f"{parent}-{insiders.orphans.started(parent)}"]


def test_the_environment_marks_a_process_that_left_the_tree(tmp_path):
    env = {**os.environ, insiders.ENV: "goal-abcdefgh"}
    assert _ask(tmp_path, env=env) == "goal-abcdefgh"
    assert _ask(tmp_path, env={**env, insiders.ENV: ""}) == "?"
