"""What a Stop costs in goal-file reads and writes, counted on the real files (Python's audit events
for every open and rename), and that the store's reuse of what it last read or wrote never hides a
change made on disk."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from goal_convergence.agents.claude_code import hooks
from goal_convergence.goals import creation, specs
from goal_convergence.models import ConditionEvidence, Decision, Goal, Iteration, now_iso
from goal_convergence.storage import evidence_files
from goal_convergence.storage.store import Store

_WATCHING: list[GoalFileIO] = []


class GoalFileIO:
    """Counts the opens for reading and the renames into place of one goal file, in this process."""

    def __init__(self, path: Path) -> None:
        self.path, self.reads, self.writes = os.path.abspath(path), 0, 0

    def see(self, event: str, args: tuple) -> None:
        if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
            if os.path.abspath(os.fsdecode(args[0])) == self.path and not (args[1] or "r").strip("rbt"):
                self.reads += 1
        elif event == "os.rename" and os.path.abspath(os.fsdecode(args[1])) == self.path:
            self.writes += 1

    def __enter__(self) -> GoalFileIO:
        _WATCHING.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _WATCHING.remove(self)


def _audit(event: str, args: tuple) -> None:
    for counter in _WATCHING:
        counter.see(event, args)


sys.addaudithook(_audit)  # hooks cannot be removed: this one is inert unless a GoalFileIO is entered


@pytest.fixture
def project(git_repo: Path) -> Path:
    """A project whose one check passes once ``fixed.txt`` exists."""
    (git_repo / "check.py").write_text("import os, sys\nsys.exit(0 if os.path.exists('fixed.txt') else 1)\n")
    return git_repo


def new_goal(project: Path) -> Goal:
    spec = specs.GoalSpec(project=project, objective="create fixed.txt", checks=["python3 check.py"],
                          oracle_provider="conditions", max_iterations=10, session_id="s-1")
    return creation.new_goal(Store(), spec)


def assistant_line(mid: str, out: int) -> str:
    return json.dumps({"type": "assistant", "timestamp": "2099-01-01T00:00:00Z", "message": {
        "id": mid, "model": "claude-sonnet-5", "role": "assistant", "content": [{"type": "text", "text": "ok"}],
        "usage": {"input_tokens": 1000, "output_tokens": out}}}) + "\n"


def stop(project: Path, transcript: Path) -> dict:
    data = {"session_id": "s-1", "transcript_path": str(transcript), "cwd": str(project), "hook_event_name": "Stop",
            "stop_hook_active": False, "last_assistant_message": "Done."}
    return hooks.run("stop", json.dumps(data).encode())


def test_a_stop_that_carries_on_reads_its_goal_file_once_and_writes_it_twice(project, tmp_path):
    goal = new_goal(project)
    path = Store().path_for(Goal, goal.goal_id)
    for n in (1, 2):  # the second stop starts from a goal file with history
        with GoalFileIO(path) as io:
            answer = stop(project, tmp_path / "none.jsonl")
        assert hooks.feedback(answer) and Store().load(Goal, goal.goal_id).spent.iterations == n
        # the maker's charge before the checks (racing hooks and crashes rely on it), and the record
        assert (io.reads, io.writes) == (1, 2)


def test_a_stop_that_ends_the_loop_reads_once_writes_twice_and_still_charges_the_held_back_message(project, tmp_path):
    goal = new_goal(project)
    (project / "fixed.txt").write_text("yes\n")
    transcript = tmp_path / "s-1.jsonl"
    transcript.write_text(assistant_line("msg_1", 100) + assistant_line("msg_2", 50))
    with GoalFileIO(Store().path_for(Goal, goal.goal_id)) as io:
        answer = stop(project, transcript)
    assert answer["systemMessage"].startswith(f"goal-convergence: {goal.goal_id} converged after 1 iteration")
    assert (io.reads, io.writes) == (1, 2)
    done = Store().load(Goal, goal.goal_id)
    # msg_2, held back by the Stop's read in case it was still being written, is charged as the loop ends
    assert done.spent.maker_dollars == pytest.approx((1000 * 2 * 2 + 150 * 10) / 1e6)
    assert done.transcript_offsets == {str(transcript): transcript.stat().st_size}
    assert done.state == "converged" and done.active_since is None and done.pending is None


def test_a_goal_changed_on_disk_since_the_store_last_saw_it_is_read_again_not_overwritten(store, make_goal):
    goal = store.create(make_goal(objective="first"))
    path = store.path_for(Goal, goal.goal_id)
    Store(store.root).update(Goal, goal.goal_id, lambda g: setattr(g, "objective", "other"))  # another process
    assert store.load(Goal, goal.goal_id).objective == "other"
    # an edit in place, of the same size: only the modification time tells
    path.write_text(path.read_text().replace('"other"', '"later"'))
    store.update(Goal, goal.goal_id, lambda g: setattr(g, "min_confidence", 0.5))
    after = Store(store.root).load(Goal, goal.goal_id)
    assert (after.objective, after.min_confidence) == ("later", 0.5)


def test_a_failed_change_leaves_nothing_of_itself_in_what_the_store_kept(store, make_goal):
    record = Iteration(number=1, started_at=now_iso(), ended_at=now_iso(), maker_summary="as recorded",
                       decision=Decision(action="continue"))
    goal = store.create(make_goal(history=[record]))

    def change(g: Goal) -> None:
        g.history[0].maker_summary = "changed, then the change failed"
        raise RuntimeError("failed")

    with pytest.raises(RuntimeError):
        store.update(Goal, goal.goal_id, change)
    assert store.load(Goal, goal.goal_id).history[0].maker_summary == "as recorded"
    assert store.update(Goal, goal.goal_id, lambda g: None).history[0].maker_summary == "as recorded"


def test_what_the_store_kept_after_its_writes_is_what_a_fresh_read_gives(store, make_goal):
    evidence = ConditionEvidence(index=0, type="test_pass", command="pytest", passed=False, exit_code=1,
                                 output_head="h" * 3000, output_tail="t" * 3000, failure_lines=["FAILED a", "FAILED b"])
    goal = store.create(make_goal())
    for n in range(1, evidence_files.HYDRATED + 3):
        record = Iteration(number=n, started_at=now_iso(), ended_at=now_iso(), conditions=[evidence],
                           decision=Decision(action="continue"))
        store.update(Goal, goal.goal_id, lambda g, r=record: g.history.append(r))
    kept, fresh = store.load(Goal, goal.goal_id), Store(store.root).load(Goal, goal.goal_id)
    assert kept == fresh
    assert kept.history[0].conditions[0].output_tail == "" and kept.history[-1].conditions[0] == evidence
