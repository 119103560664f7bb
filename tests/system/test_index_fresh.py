"""A SessionStart over a fresh index reads it with index.py alone; a stale one is left to reindex.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

from goal_convergence.system import index, reindex


def test_a_fresh_index_is_read_without_reindexing(store, make_goal):
    goal = store.create(make_goal())
    reindex.summaries(store.root, [])
    assert [s["goalId"] for s in index.fresh(store.root)] == [goal.goal_id]
    path = store.root / "goals" / f"{goal.goal_id}.json"
    path.write_text(path.read_text(encoding="utf-8") + "\n", encoding="utf-8")  # behind the store's back
    assert index.fresh(store.root) is None
    assert [s["goalId"] for s in reindex.summaries(store.root, [])] == [goal.goal_id]
    assert index.fresh(store.root) is not None


def test_session_start_over_a_fresh_index_imports_no_reindexing(store, make_goal, tmp_path):
    goal = store.create(make_goal())
    reindex.summaries(store.root, [])
    payload = json.dumps({"session_id": "s-new", "cwd": goal.project_root, "source": "startup"})
    code = ("import sys, json; from goal_convergence.agents.claude_code import fast; "
            f"found = fast.answer('session-start', {payload!r}.encode()); "
            "print(json.dumps([bool(found), 'goal_convergence.system.reindex' in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == [True, False]


def test_a_scan_survives_writes_renaming_their_temp_files_under_it(store, make_goal):
    """Another process's atomic write renames its temp file between the scan's listing and its stat."""
    goal = store.create(make_goal())
    folder, done = store.root / "goals", threading.Event()

    def write() -> None:
        while not done.is_set():
            temp = folder / f".{goal.goal_id}.json.{os.getpid()}.tmp"
            temp.write_bytes(b"{}")
            temp.unlink()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        for _ in range(3000):
            on_disk, _temps = index.scan(store.root)
            assert list(on_disk) == [goal.goal_id]
    finally:
        done.set()
        writer.join()
