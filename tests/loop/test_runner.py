"""The headless loop (`runner.run_goal`) in-process: real conditions in a temp project, a maker and an
oracle handed in, and the clock injected."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from goal_convergence.errors import OracleUnavailable
from goal_convergence.loop import engine, runner
from goal_convergence.models import Budget, Cost, Escalation, Goal, StoppingCondition, TriageItem, Verdict
from tests.fakes import Clock, FakeOracle

YES = Verdict(converged=True, reasons=["done"])
NO = Verdict(converged=False, reasons=["done.txt is missing"], next_hint="create done.txt")


@dataclass
class Maker:
    """Creates ``done.txt`` on its ``finish_on``-th turn and takes a minute of the clock each turn."""

    clock: Clock
    finish_on: int = 1
    turns: list[str] = field(default_factory=list)  # the hint each turn was given
    name: str = "fake"

    def work(self, goal: Goal, hint: str, timeout: float | None) -> engine.MakerReport:
        self.turns.append(hint)
        self.clock.advance(60)
        if len(self.turns) >= self.finish_on:
            (Path(goal.project_root) / "done.txt").write_text("done\n")
        return engine.MakerReport(summary=f"turn {len(self.turns)}", cost=Cost(dollars=0.1, tokens=10))


@pytest.fixture
def goal_id(store, make_goal, tmp_path) -> str:
    check = StoppingCondition(type="custom_command", command="test -f done.txt")
    return store.create(make_goal(stopping_conditions=[check])).goal_id


def edges(clock: Clock, oracle: FakeOracle, **changes) -> engine.Edges:
    return engine.Edges(get_oracle=lambda config, goal, rerun=None: oracle, now=clock.now, **changes)


def test_a_run_hands_the_hint_on_and_ends_converged(store, goal_id):
    clock, oracle = Clock(), FakeOracle()
    oracle.enqueue(NO, YES)
    maker = Maker(clock, finish_on=2)
    result = runner.run_goal(store, goal_id, maker, edges=edges(clock, oracle))
    assert (result.stop, result.exit_code) == ("converged", 0)
    assert maker.turns == ["", "create done.txt"]
    assert [o.decision.action for o in result.outcomes] == ["continue", "converge"]
    g = result.goal
    assert (g.spent.iterations, g.spent.active_seconds, g.spent.maker_dollars) == (2, 120, pytest.approx(0.2))
    ledger = result.ledger()
    assert (ledger["met"], ledger["turns"], [e["passing"] for e in ledger["evidence"]]) == (True, 2, [0, 1])


def test_an_oracle_that_cannot_be_set_up_stops_the_run_before_the_maker_spends_anything(store, goal_id):
    clock = Clock()

    def unavailable(config, goal, rerun=None):
        raise OracleUnavailable("no oracle can run here: set ANTHROPIC_API_KEY")

    maker = Maker(clock)
    with pytest.raises(OracleUnavailable, match="ANTHROPIC_API_KEY"):
        runner.run_goal(store, goal_id, maker, edges=engine.Edges(get_oracle=unavailable, now=clock.now))
    saved = store.load(Goal, goal_id)
    assert maker.turns == [] and saved.spent.maker_dollars == 0 and saved.pending is None
    assert saved.state == "active" and saved.active_since is None


def test_a_pending_iteration_is_judged_without_running_the_maker_again(store, goal_id, tmp_path):
    clock, oracle = Clock(), FakeOracle()
    (tmp_path / "done.txt").write_text("done\n")
    engine.record_maker(store, goal_id, engine.MakerReport(summary="did it", cost=Cost(dollars=0.5)),
                        now=clock.now())  # then the run that recorded it was killed
    oracle.enqueue(YES)
    maker = Maker(clock)
    result = runner.run_goal(store, goal_id, maker, edges=edges(clock, oracle))
    assert result.stop == "converged" and maker.turns == []
    assert result.goal.history[0].maker_cost.dollars == 0.5 and result.goal.spent.maker_dollars == 0.5


def test_a_spent_budget_escalates_before_the_maker_starts(store, make_goal):
    check = StoppingCondition(type="custom_command", command="test -f done.txt")
    goal = make_goal(stopping_conditions=[check], budget=Budget(max_iterations=1))
    goal.spent.iterations = 1
    goal_id = store.create(goal).goal_id
    clock, maker = Clock(), Maker(Clock())
    result = runner.run_goal(store, goal_id, maker, edges=edges(clock, FakeOracle()))
    assert (result.stop, result.exit_code, maker.turns) == ("ceiling", 4, [])
    assert store.load(TriageItem, result.goal.escalation.triage_id).stop_reason == "ceiling"


def test_an_end_a_crash_left_unfiled_is_filed_and_announced_by_the_next_run(store, make_goal):
    """Killed between saving the escalation and writing its triage item: the next run repairs it."""
    goal = make_goal(state="escalated", stop_reason="stuck")
    goal.escalation = Escalation(stop_reason="stuck", triage_id="tri-0123abcd", at=goal.created_at)
    goal_id = store.create(goal).goal_id
    announced = []
    clock = Clock()
    result = runner.run_goal(store, goal_id, Maker(clock),
                             edges=edges(clock, FakeOracle(), announce=lambda s, g, now: announced.append(g.state)))
    assert (result.stop, result.exit_code) == ("stuck", 2)
    assert store.load(TriageItem, "tri-0123abcd").goal_id == goal_id and announced == ["escalated"]


@pytest.mark.parametrize(("stop", "code"), [("converged", 0), ("unfixable", 1), ("stuck", 2), ("timeout", 3),
                                           ("ceiling", 4), ("budget-exhausted", 5), ("cancelled", 6),
                                           ("judge-error", 7), ("paused", 75)])
def test_each_stop_has_its_exit_code(make_goal, stop, code):
    assert runner.RunResult(make_goal(), stop).exit_code == code


def test_a_run_in_a_workdir_makes_checks_and_maker_work_there_and_the_goal_file_keeps_the_project(
        store, goal_id, tmp_path):
    clock, oracle = Clock(), FakeOracle()
    oracle.enqueue(YES)
    elsewhere = tmp_path / "worktree"
    elsewhere.mkdir()
    result = runner.run_goal(store, goal_id, Maker(clock), edges=edges(clock, oracle), workdir=elsewhere)
    assert result.stop == "converged"
    assert (elsewhere / "done.txt").exists()
    project = Path(result.goal.project_root)
    assert project != elsewhere and not (project / "done.txt").exists()
    assert result.goal.history[0].conditions[0].passed  # the check ran where the maker worked
