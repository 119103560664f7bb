"""A goal's history at scale: each iteration adds a small, bounded record to the goal file, its bulky
evidence lives beside it, and what reads evidence still finds it. Real condition runs, a real store."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from goal_convergence.checks import conditions
from goal_convergence.models import Decision, Goal, Iteration, StoppingCondition, now_iso
from goal_convergence.oracle.input import build_input
from goal_convergence.report import render
from goal_convergence.storage import evidence_files

SAMPLE = Path(__file__).parents[1] / "samples" / "pytest_fail.txt"


@pytest.fixture(scope="module")
def evidence(tmp_path_factory):
    """What a real run of a failing pytest suite leaves: head, tail and failure lines of 20 KB of output."""
    root = tmp_path_factory.mktemp("project")
    command = f"{sys.executable} -c \"import sys; sys.stdout.write(open({str(SAMPLE)!r}).read() * 10); sys.exit(1)\""
    found = conditions.run_condition(StoppingCondition(type="test_pass", command=command), 0, root)
    assert not found.passed and len(found.output_head) + len(found.output_tail) > evidence_files.INLINE_CHARS
    return found


def _record(number: int, evidence) -> Iteration:
    return Iteration(number=number, started_at=now_iso(), ended_at=now_iso(), conditions=[evidence.model_copy()],
                     tree_fingerprint=f"tree-{number}", decision=Decision(action="continue", hint=f"hint {number}"))


def _grow(store, goal_id: str, evidence, upto: int) -> list[int]:
    sizes = []
    path = store.path_for(Goal, goal_id)
    for n in range(1, upto + 1):
        store.update(Goal, goal_id, lambda g, n=n: g.history.append(_record(n, evidence)))
        sizes.append(path.stat().st_size)
    return sizes


def test_the_goal_file_grows_by_a_small_bounded_record_per_iteration(store, make_goal, evidence):
    goal = store.create(make_goal(budget={"maxIterations": 1000}))
    sizes = _grow(store, goal.goal_id, evidence, 40)
    growth = [b - a for a, b in zip(sizes[10:], sizes[11:])]
    assert max(growth) < 2_500, growth  # each iteration ran 20 KB of output; its record stays small
    assert max(growth) - min(growth) < 200  # and the same size at 40 as at 10: nothing accumulates
    on_disk = json.loads(store.path_for(Goal, goal.goal_id).read_text())
    assert on_disk.pop("seal")["mac"]
    assert Goal.from_doc(on_disk).spent == store.load(Goal, goal.goal_id).spent  # the file alone is a valid goal
    assert on_disk["history"][-1]["conditions"][0]["failureLines"] == evidence.failure_lines[:1]


def test_what_reads_evidence_still_gets_it(store, make_goal, evidence):
    goal = store.create(make_goal())
    _grow(store, goal.goal_id, evidence, 6)
    loaded = store.load(Goal, goal.goal_id)
    for it in loaded.history[-evidence_files.HYDRATED:]:  # the oracle's recent iterations, status, the Stop reason
        assert it.conditions[0] == evidence
    older = loaded.history[0].conditions[0]
    assert (older.output_tail, older.failure_lines) == ("", evidence.failure_lines[:1])
    assert older.first_failure == evidence.first_failure and older.census == evidence.census
    assert "#6 continue" in render.status(loaded)
    assert [p.number for p in build_input(loaded, [evidence], None).recent_iterations] == [4, 5, 6]


def test_a_goal_saved_without_a_change_is_saved_unchanged(store, make_goal, evidence):
    goal = store.create(make_goal())
    _grow(store, goal.goal_id, evidence, 5)
    path = store.path_for(Goal, goal.goal_id)
    before = json.loads(path.read_text())
    store.update(Goal, goal.goal_id, lambda g: None)
    after = json.loads(path.read_text())
    assert after.pop("updatedAt") and before.pop("updatedAt") and after.pop("seal") and before.pop("seal")
    assert after == before


def test_a_lost_side_file_costs_the_evidence_not_the_goal(store, make_goal, evidence):
    goal = store.create(make_goal())
    _grow(store, goal.goal_id, evidence, 2)
    side = evidence_files.folder(store.path_for(Goal, goal.goal_id)) / "iteration-2.json"
    side.write_text("[" * 100_000)
    loaded = store.load(Goal, goal.goal_id)
    assert loaded.history[-1].conditions[0].output_tail == "" and loaded.history[0].conditions[0] == evidence
