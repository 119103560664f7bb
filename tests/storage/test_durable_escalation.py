"""A goal's escalation and its triage item are one durable step: with the disk full at every write an
escalation makes (a real full tmpfs, filled to leave 0, 1, 2... pages), or read-only, or a kill between the
two writes, the goal is escalated with its item listed, or it is not escalated and no item is there. After
room returns, the next command sees both, or neither."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from goal_convergence.goals import triage
from goal_convergence.loop import engine
from goal_convergence.models import Goal, TriageItem
from goal_convergence.storage.store import Store
from goal_convergence.system import clock
from tests.conftest import run_goal
from tests.diskfaults import PAGE, small_disk

SHORT = os.environ.get("GOAL_STRESS_SCALE", "short") != "full"


def _whole(git_repo, goal_id: str) -> str:
    """Both or neither, as the commands show it; the goal's state."""
    status = run_goal(git_repo, "status", goal_id, "--json")
    assert status.returncode == 0, status.stderr
    goal = json.loads(status.stdout)
    listed = run_goal(git_repo, "triage", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    items = [i for i in json.loads(listed.stdout) if i["goalId"] == goal_id]
    if goal["state"] == "escalated":
        assert [i["triageId"] for i in items] == [goal["escalation"]["triageId"]], (goal["escalation"], items)
        shown = run_goal(git_repo, "triage", "show", goal["escalation"]["triageId"])
        assert shown.returncode == 0, shown.stderr
    else:
        assert items == [], items
    return goal["state"]


@pytest.fixture
def spent(tmp_path, make_goal, git_repo):
    """A home holding one active goal whose iteration budget is spent: its next step escalates it."""
    home = tmp_path / "snapshot"
    store = Store(home)
    goal = make_goal(project_root=str(git_repo))
    goal.budget.max_iterations, goal.spent.iterations = 1, 1
    store.create(goal)
    return home, goal.goal_id


def test_a_full_disk_at_every_write_of_an_escalation_leaves_both_or_neither(spent, gc_home, git_repo):
    snapshot, goal_id = spent
    states = []
    with small_disk(gc_home, 2 << 20) as disk:
        for pages in range(0, 10 if SHORT else 24):
            for entry in list(gc_home.iterdir()):
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
            shutil.copytree(snapshot, gc_home, dirs_exist_ok=True)
            disk.fill(leave=pages * PAGE)
            try:
                engine.stop_if_exhausted(Store(gc_home), goal_id)
            except OSError as exc:
                assert exc.errno == 28 and str(gc_home) in str(exc), exc  # a DiskError naming the file
            # no half: with the disk still full, the files say both or neither
            store = Store(gc_home)
            goal = store.load(Goal, goal_id)
            items = list((gc_home / "triage").glob("tri-*.json")) if (gc_home / "triage").is_dir() else []
            if goal.state == "escalated":
                assert [p.stem for p in items] == [goal.escalation.triage_id]
                assert store.load(TriageItem, goal.escalation.triage_id).goal_id == goal_id
            else:
                assert items == []
            disk.room()
            states.append(_whole(git_repo, goal_id))
    assert "active" in states and "escalated" in states, states  # the fault landed before and after the step


def test_a_kill_between_the_two_writes_is_settled_by_the_next_command(spent, gc_home, git_repo):
    """A staged item (the item written, the goal not yet) is removed; one whose goal was written is published."""
    snapshot, goal_id = spent
    shutil.copytree(snapshot, gc_home, dirs_exist_ok=True)
    store = Store(gc_home)
    goal = store.load(Goal, goal_id)
    orphan = triage.item_of(triage.escalate(goal.model_copy(deep=True), "ceiling", None, "", clock.now()))
    staged = gc_home / "triage" / f".{orphan.triage_id}.json.pending"
    store._dir("triage")
    store._write(staged, orphan.dump())  # what a kill right after the first write leaves
    assert _whole(git_repo, goal_id) == "active" and not staged.exists()

    outcome = engine.stop_if_exhausted(store, goal_id)
    item = gc_home / "triage" / f"{outcome.goal.escalation.triage_id}.json"
    os.rename(item, item.with_name(f".{item.name}.pending"))  # a kill after the goal's write, before the rename
    assert _whole(git_repo, goal_id) == "escalated" and item.exists()


def test_a_goal_escalated_without_its_item_gets_it_at_the_next_look(spent, gc_home, git_repo):
    """What an older version left after a full disk: the goal names an item that was never written."""
    snapshot, goal_id = spent
    shutil.copytree(snapshot, gc_home, dirs_exist_ok=True)
    outcome = engine.stop_if_exhausted(Store(gc_home), goal_id)
    (gc_home / "triage" / f"{outcome.goal.escalation.triage_id}.json").unlink()
    assert _whole(git_repo, goal_id) == "escalated"


def test_goal_run_on_a_full_triage_disk_escalates_both_or_neither(gc_home, git_repo):
    """The report's case through the real command: `goal run` escalates while the home's disk is full."""
    with small_disk(gc_home, 4 << 20) as disk:
        made = run_goal(git_repo, "new", "make it pass", "--check", "false", "--oracle", "conditions",
                        "--max-iterations", "1", "--json")
        assert made.returncode == 0, made.stderr
        goal_id = json.loads(made.stdout)["goalId"]
        disk.fill(leave=2 * PAGE)
        done = run_goal(git_repo, "run", goal_id, "--maker-cmd", "true")
        assert "unexpected" not in done.stderr, done.stderr
        disk.room()
        _whole(git_repo, goal_id)


def test_a_read_only_home_at_an_escalation_leaves_neither_and_says_so(spent, gc_home, git_repo):
    snapshot, goal_id = spent
    with small_disk(gc_home) as disk:
        shutil.copytree(snapshot, gc_home, dirs_exist_ok=True)
        disk.readonly()
        with pytest.raises(OSError) as raised:
            engine.stop_if_exhausted(Store(gc_home), goal_id)
        assert raised.value.errno == 30 and str(gc_home) in str(raised.value)  # EROFS, naming the file
        assert _whole(git_repo, goal_id) == "active"  # read-only still: the reads work and show neither
        disk.readonly(False)
        assert _whole(git_repo, goal_id) == "active"
        engine.stop_if_exhausted(Store(gc_home), goal_id)
        assert _whole(git_repo, goal_id) == "escalated"
