"""Which goal a session works on, told by one small file per session: a Stop or SessionEnd with no goal
costs one failed open however many goals there are, and the files follow every change of a goal's state."""

from __future__ import annotations

import json
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

from goal_convergence.agents.claude_code import fast
from goal_convergence.models import Goal
from goal_convergence.storage.store import Store
from goal_convergence.system import index


def _stop(session: str) -> bytes:
    return json.dumps({"session_id": session, "hook_event_name": "Stop", "cwd": "/"}).encode()


def test_a_stop_with_no_goal_does_not_read_the_index(store, make_goal, gc_home):
    store.create(make_goal(session_id="s-1"))
    index.index_path(gc_home).write_text("[" * 100_000)  # a stale, unreadable index: the answer needs none
    opened: list[str] = []
    recording = [True]  # an audit hook cannot be removed: it stops recording when the test ends
    sys.addaudithook(lambda event, args: recording[0] and event in ("open", "os.scandir")
                     and opened.append(str(args[0])))
    try:
        assert fast.answer("stop", _stop("s-2")) == {} and fast.answer("session-end", _stop("s-2")) == {}
        marker = len(opened)
        assert fast.answer("stop", _stop("s-1")) is None  # its goal: the slow path
    finally:
        recording[0] = False
    assert opened[:marker] == [str(index.sessions_dir(gc_home) / "s-2")] * 2


def test_the_binding_follows_pause_resume_and_a_move_to_another_session(store, make_goal, gc_home):
    goal = store.create(make_goal(session_id="s-1"))
    binding = index.sessions_dir(gc_home)
    assert (binding / "s-1").read_text() == goal.goal_id
    store.update(Goal, goal.goal_id, lambda g: setattr(g, "state", "paused"))
    assert not (binding / "s-1").exists() and fast.answer("stop", _stop("s-1")) == {}
    def move(g: Goal) -> None:
        g.state, g.session_id = "active", "s-2"

    store.update(Goal, goal.goal_id, move)
    assert sorted(os.listdir(binding)) == ["s-2"] and fast.answer("stop", _stop("s-2")) is None


def test_a_home_from_before_the_bindings_gets_them_on_the_first_slow_hook(store, make_goal, gc_home):
    goal = store.create(make_goal(session_id="s-1"))
    (index.sessions_dir(gc_home) / "s-1").unlink()
    index.sessions_dir(gc_home).rmdir()  # as 0.1.0 left the home
    assert index.binding(gc_home, "s-2") is None  # the files cannot tell: the index decides, and writes them
    assert fast.answer("stop", _stop("s-2")) == {}
    assert os.listdir(index.sessions_dir(gc_home)) == ["s-1"]
    assert (index.sessions_dir(gc_home) / "s-1").read_text() == goal.goal_id


def test_a_slow_hook_writes_them_too(store, make_goal, gc_home):
    goal = store.create(make_goal(session_id="s-1"))
    (index.sessions_dir(gc_home) / "s-1").unlink()
    index.sessions_dir(gc_home).rmdir()
    Store(gc_home).summaries()
    assert (index.sessions_dir(gc_home) / "s-1").read_text() == goal.goal_id


def test_a_goal_changed_behind_the_stores_back_is_rebound_when_the_index_is_refreshed(store, make_goal, gc_home):
    goal = store.create(make_goal(session_id="s-1"))
    path = store.path_for(Goal, goal.goal_id)
    path.write_text(path.read_text().replace('"s-1"', '"s-9"'))
    store.summaries()
    assert sorted(os.listdir(index.sessions_dir(gc_home))) == ["s-9"]


def test_a_session_id_that_cannot_be_a_file_name_asks_the_index(store, make_goal):
    store.create(make_goal(session_id="../s-1"))
    assert index.binding(store.root, "../s-1") is None
    assert fast.answer("stop", _stop("../s-1")) is None and fast.answer("stop", _stop("../other")) == {}


def test_threads_of_one_process_that_all_find_the_folder_missing_all_succeed(store, make_goal, gc_home):
    goal = store.create(make_goal(session_id="s-1"))
    folder = index.sessions_dir(gc_home)
    gate = threading.Barrier(8)

    def race(_: int) -> None:
        gate.wait()
        Store(gc_home).summaries()

    for _ in range(5):  # the race is narrow: run it a few times over
        (folder / "s-1").unlink()
        folder.rmdir()
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(race, range(8)))  # raised FileNotFoundError when every thread staged one folder
        assert os.listdir(folder) == ["s-1"] and (folder / "s-1").read_text() == goal.goal_id
        assert not [p for p in folder.parent.iterdir() if p.name.startswith(".sessions.")]
