"""The goal index, the hooks' cache of goal summaries: any doubt about it reads as stale (None), never as
old news. Real goal files written by the store, real stats."""

from __future__ import annotations

import json
import os

import pytest

from goal_convergence.models import Escalation, now_iso
from goal_convergence.system import index
from tests.conftest import fresh_index


@pytest.fixture
def two_goals(store, make_goal, gc_home):
    made = [store.create(make_goal(objective=f"goal {i}")) for i in range(2)]
    assert fresh_index(gc_home) is not None  # the store keeps it current
    return [gc_home / "goals" / f"{g.goal_id}.json" for g in made]


def test_a_home_without_goals_has_none_and_a_current_index_lists_them_all(gc_home, two_goals):
    assert fresh_index(gc_home.parent / "elsewhere") == []
    assert sorted(s["objective"] for s in fresh_index(gc_home)) == ["goal 0", "goal 1"]


def test_a_new_size_is_stale(gc_home, two_goals):
    two_goals[0].write_text(two_goals[0].read_text() + "\n")
    assert fresh_index(gc_home) is None


def test_a_new_mtime_is_stale(gc_home, two_goals):
    st = two_goals[0].stat()
    os.utime(two_goals[0], ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert fresh_index(gc_home) is None


def test_a_new_inode_with_the_same_size_and_mtime_is_stale(gc_home, two_goals):
    """A rename into place within one mtime tick: only the inode tells."""
    path = two_goals[0]
    st = path.stat()
    twin = path.with_suffix(".tmp")
    twin.write_bytes(path.read_bytes())
    os.utime(twin, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(twin, path)
    assert path.stat().st_ino != st.st_ino and path.stat().st_size == st.st_size
    assert fresh_index(gc_home) is None


def test_a_missing_goal_file_is_stale(gc_home, two_goals):
    two_goals[1].unlink()
    assert fresh_index(gc_home) is None


def test_an_extra_goal_file_is_stale_and_other_files_do_not_count(gc_home, two_goals):
    (gc_home / "goals" / "notes.json").write_text("{}")
    (gc_home / "goals" / "goal-TOOLONG99.json").write_text("{}")
    assert fresh_index(gc_home) is not None
    (gc_home / "goals" / "goal-zzzzzzzz.json").write_bytes(two_goals[0].read_bytes())
    assert fresh_index(gc_home) is None


@pytest.mark.parametrize("text", ["", "{", "[]", '{"goals": []}', '{"goals": {"goal-aaaaaaaa": 3}}', '{"other": {}}'])
def test_a_corrupt_index_is_stale(gc_home, two_goals, text):
    index.index_path(gc_home).write_text(text)
    assert fresh_index(gc_home) is None


def test_a_missing_index_with_goals_is_stale(gc_home, two_goals):
    index.index_path(gc_home).unlink()
    assert fresh_index(gc_home) is None


def test_the_summary_has_what_the_hooks_need(make_goal):
    goal = make_goal(objective="ship it", session_id="s-1", state="escalated", stop_reason="stuck",
                     escalation=Escalation(stop_reason="stuck", triage_id="tri-abcdefgh", at=now_iso()))
    goal.spent.iterations, goal.spent.maker_dollars, goal.spent.oracle_dollars = 3, 0.1234565, 0.0000001
    doc = goal.dump()
    doc["history"] = [{"decision": {"hint": "look at parse()"}}, {"decision": {"hint": ""}}, {"decision": {}}]
    summary = index.summary(doc, [1, 2, 3])
    assert summary == {"goalId": goal.goal_id, "objective": "ship it", "state": "escalated", "stopReason": "stuck",
                       "sessionId": "s-1", "projectRoot": goal.project_root, "iterations": 3, "maxIterations": 15,
                       "dollars": 0.123457, "lastHint": "look at parse()", "triageId": "tri-abcdefgh",
                       "createdAt": goal.created_at, "stamp": [1, 2, 3]}
    assert json.loads(json.dumps(summary)) == summary  # it goes into a JSON file as it is


def test_the_summary_of_a_bare_document_takes_the_defaults():
    bare = {"goalId": "goal-aaaaaaaa", "objective": "x", "projectRoot": "/p", "createdAt": "2026-01-01T00:00:00Z"}
    summary = index.summary(bare, [0, 0, 0])
    assert (summary["state"], summary["iterations"], summary["maxIterations"], summary["dollars"],
            summary["lastHint"], summary["triageId"]) == ("active", 0, None, 0, "", None)


def test_the_home_is_goal_convergence_home_else_claude_under_home(monkeypatch, tmp_path):
    monkeypatch.setenv("GOAL_CONVERGENCE_HOME", str(tmp_path / "gc"))
    assert index.home() == tmp_path / "gc"
    monkeypatch.delenv("GOAL_CONVERGENCE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert index.home() == tmp_path / ".claude"
