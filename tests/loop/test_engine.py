"""One iteration of the loop, in-process: `run_iteration` with fakes for its edges (conditions, tree,
integrity, oracle, clock, announcement) and a real store and triage inbox in a temp home."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import pytest

from goal_convergence.errors import OracleError, OracleUnavailable, PriceUnknown
from goal_convergence.goals import moves
from goal_convergence.loop import claim, engine
from goal_convergence.models import (Budget, ConditionEvidence, Cost, Goal, Integrity, IntegrityIssue, TriageItem,
                                     Verdict)
from tests.fakes import Clock, FakeOracle

YES = Verdict(converged=True, reasons=["the objective is met"])


def no(hint: str = "fix add() in calc.py") -> Verdict:
    return Verdict(converged=False, reasons=["add() still subtracts"], next_hint=hint)


class Checks:
    """Scripted condition runs: each run takes the next list of pass/fail, one per condition it runs;
    ``during`` runs inside the next run, as something else happening while the checks run."""

    def __init__(self, *runs: list[bool]) -> None:
        self.runs = list(runs)
        self.asked: list[list[int] | None] = []
        self.during: Callable[[], None] | None = None

    def run_conditions(self, conds, root, *, only=None, on_progress=None, expected=None) -> list[ConditionEvidence]:
        self.asked.append(only)
        if self.during:
            during, self.during = self.during, None
            during()
        indices = list(range(len(conds))) if only is None else only
        return [self._evidence(i, conds[i], passed) for i, passed in zip(indices, self.runs.pop(0), strict=True)]

    def run_condition(self, cond, index, root) -> ConditionEvidence:
        return self.run_conditions([cond], root)[0].model_copy(update={"index": index})

    @staticmethod
    def _evidence(i: int, cond, passed: bool) -> ConditionEvidence:
        return ConditionEvidence(index=i, type=cond.type, command=cond.command, passed=passed,
                                 exit_code=0 if passed else 1, failure_lines=[] if passed else ["FAILED test_add"])


class Tree:
    """Scripted tree fingerprints; the last one repeats."""

    def __init__(self, *prints: str) -> None:
        self.prints = list(prints)

    def __call__(self, root) -> str:
        return self.prints.pop(0) if len(self.prints) > 1 else self.prints[0]


@dataclass
class World:
    checks: Checks
    tree: Tree = field(default_factory=lambda: Tree("t1"))
    oracle: FakeOracle = field(default_factory=FakeOracle)
    clock: Clock = field(default_factory=Clock)
    guard: Integrity | None = None
    oracle_error: Exception | None = None  # raised when the oracle is set up
    announced: list[tuple[str, str | None]] = field(default_factory=list)

    def get_oracle(self, config, goal, *, rerun=None) -> FakeOracle:
        if self.oracle_error:
            raise self.oracle_error
        return self.oracle

    def edges(self) -> engine.Edges:
        return engine.Edges(
            run_conditions=self.checks.run_conditions, run_condition=self.checks.run_condition,
            fingerprint=self.tree, inspect=lambda *args, **kwargs: self.guard, get_oracle=self.get_oracle,
            watch=lambda root: lambda: [],  # the checks here are scripted: no real tree moves
            build_input=lambda goal, found, summary, guard, **_: {"summary": summary,
                                                                  "passed": [e.passed for e in found]},
            announce=lambda store, goal, now: self.announced.append((goal.state, goal.stop_reason)),
            now=self.clock.now)


@pytest.fixture
def goal_id(store, make_goal) -> str:
    return store.create(make_goal()).goal_id


def step(store, goal_id: str, world: World, summary: str = "fixed add()", dollars: float = 0.25) -> engine.Outcome:
    """The maker worked for a minute, then one iteration."""
    world.clock.advance(60)
    report = engine.MakerReport(summary=summary, cost=Cost(dollars=dollars, tokens=1000))
    return engine.run_iteration(store, goal_id, report, edges=world.edges())


def test_green_and_the_oracle_agrees_converges_and_is_announced_once(store, goal_id):
    world = World(Checks([True]))
    world.oracle.enqueue(YES)
    outcome = step(store, goal_id, world)
    assert (outcome.decision.action, outcome.goal.state, outcome.goal.stop_reason) == ("converge", "converged",
                                                                                      "converged")
    saved = store.load(Goal, goal_id)
    assert [it.number for it in saved.history] == [1] and saved.pending is None
    assert (saved.spent.iterations, saved.spent.maker_dollars, saved.spent.oracle_dollars) == (1, 0.25, 0.01)
    assert world.oracle.history == [{"summary": "fixed add()", "passed": [True]}]
    assert world.announced == [("converged", "converged")]
    assert outcome.triage_id is None


def test_a_red_run_continues_with_the_oracles_hint(store, goal_id):
    world = World(Checks([False]))
    world.oracle.enqueue(no("mul() adds: return a * b"))
    outcome = step(store, goal_id, world)
    assert (outcome.decision.action, outcome.decision.hint) == ("continue", "mul() adds: return a * b")
    saved = store.load(Goal, goal_id)
    assert saved.state == "active" and saved.last_hint == "mul() adds: return a * b"
    assert saved.history[0].verdict == no("mul() adds: return a * b") and saved.pending is None


def test_files_changed_while_judging_are_checked_again(store, goal_id):
    world = World(Checks([True], [True]), tree=Tree("t1", "t2", "t2"))
    world.oracle.enqueue(YES, YES)
    outcome = step(store, goal_id, world)
    assert outcome.decision.action == "converge"
    assert any("files changed while the oracle judged" in n for n in outcome.decision.notes)
    assert len(world.oracle.history) == 2 and world.checks.asked == [None, None]
    assert outcome.iteration.tree_fingerprint == "t2"
    assert store.load(Goal, goal_id).spent.oracle_dollars == pytest.approx(0.02)  # both calls are paid for


class ConditionsLike(FakeOracle):
    """A judge that never looks at the project (as the conditions judge): no diff for it, and no second look."""

    reads_tree = False


def test_a_judge_that_never_looks_at_the_project_gets_no_diff_and_no_second_look(store, goal_id):
    asked: list[bool] = []
    world = World(Checks([True]), tree=Tree("t1", "t2"), oracle=ConditionsLike())
    world.oracle.enqueue(YES)
    edges = replace(world.edges(), build_input=lambda goal, found, summary, guard, diff: asked.append(diff))
    world.clock.advance(60)
    outcome = engine.run_iteration(store, goal_id, engine.MakerReport(summary="done"), edges=edges)
    assert outcome.decision.action == "converge" and asked == [False]
    assert world.tree.prints == ["t2"]  # fingerprinted once: a judge that cannot write needs no look after it


def test_a_flip_with_no_file_change_is_run_again_and_counts_as_failing_when_the_rerun_fails(store, goal_id):
    world = World(Checks([False], [True], [False]))
    world.oracle.enqueue(no(), no())
    assert step(store, goal_id, world).decision.action == "continue"
    outcome = step(store, goal_id, world)  # the same tree: nothing changed, yet the check now passes
    assert world.checks.asked == [None, None, [0]]
    cond = outcome.iteration.conditions[0]
    assert cond.passed is False and cond.rerun is not None and cond.rerun.passed is False
    assert any("flipped" in n and "failing (flaky)" in n for n in outcome.decision.notes)


def test_an_oracle_call_that_could_not_be_paid_for_is_not_made(store, goal_id):
    world = World(Checks([False]), oracle=FakeOracle(estimate=100.0))
    outcome = step(store, goal_id, world)
    assert (outcome.goal.state, outcome.goal.stop_reason) == ("escalated", "budget-exhausted")
    assert world.oracle.history == [] and outcome.iteration.verdict is None
    assert store.load(Goal, goal_id).spent.oracle_dollars == 0
    assert store.load(TriageItem, outcome.triage_id).stop_reason == "budget-exhausted"


def test_three_judge_errors_in_a_row_escalate_and_each_one_is_paid_for(store, goal_id):
    world = World(Checks([False], [False], [False]), tree=Tree("t1", "t1", "t2", "t2", "t3"))
    failed = OracleError("the oracle's answer was not valid JSON; it is asked again at the next stop")
    failed.cost = Cost(dollars=0.003, tokens=30)  # what the failed attempt spent
    world.oracle.enqueue(failed, failed, failed)
    assert [step(store, goal_id, world).decision.action for _ in range(2)] == ["continue", "continue"]
    outcome = step(store, goal_id, world)
    assert (outcome.goal.state, outcome.goal.stop_reason) == ("escalated", "judge-error")
    saved = store.load(Goal, goal_id)
    assert [it.judge_error for it in saved.history] == [str(failed)] * 3
    assert saved.spent.oracle_dollars == pytest.approx(0.009) and saved.spent.oracle_tokens == 90


@pytest.mark.parametrize("error", [
    OracleUnavailable("no oracle can run here: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)"),
    PriceUnknown("no price for model 'claude-x', so its cost cannot be counted; add it to prices.json"),
])
def test_an_oracle_that_cannot_be_set_up_is_a_judge_error_and_the_maker_is_charged_once(store, goal_id, error):
    world = World(Checks([False], [False], [False]), tree=Tree("t1", "t2", "t3"), oracle_error=error)
    outcomes = [step(store, goal_id, world, dollars=0.25) for _ in range(3)]
    assert [o.decision.action for o in outcomes] == ["continue", "continue", "stop"]
    saved = store.load(Goal, goal_id)
    assert (saved.state, saved.stop_reason) == ("escalated", "judge-error")
    assert [it.judge_error for it in saved.history] == [str(error)] * 3 and saved.pending is None
    assert saved.spent.maker_dollars == pytest.approx(0.75) and saved.spent.maker_tokens == 3000
    assert [it.maker_cost.dollars for it in saved.history] == [0.25] * 3
    # the escalation says what went wrong and what to do
    assert str(error) in saved.escalation.detail and f"goal resume {goal_id}" in saved.escalation.detail
    assert str(error) in " ".join(store.load(TriageItem, outcomes[-1].triage_id).reasons)


def test_the_last_iteration_of_the_budget_escalates_with_a_triage_item(store, make_goal):
    goal_id = store.create(make_goal(budget=Budget(max_iterations=2, max_dollars=10.0))).goal_id
    world = World(Checks([False], [False]), tree=Tree("t1", "t2"))
    world.oracle.enqueue(no(), no())
    assert step(store, goal_id, world).decision.action == "continue"
    outcome = step(store, goal_id, world)
    assert (outcome.decision.action, outcome.goal.state, outcome.goal.stop_reason) == ("stop", "escalated", "ceiling")
    item = store.load(TriageItem, outcome.triage_id)
    assert outcome.goal.escalation.triage_id == item.triage_id
    assert (item.goal_id, item.stop_reason, item.iterations) == (goal_id, "ceiling", 2)
    assert item.failing_conditions[0].first_failure == "FAILED test_add"
    assert world.announced[-1] == ("escalated", "ceiling")


def test_a_budget_spent_before_the_next_iteration_escalates_at_once(store, make_goal):
    goal_id = store.create(make_goal(budget=Budget(max_duration="2m"))).goal_id
    world = World(Checks([False]))
    world.oracle.enqueue(no())
    claim.take(store, goal_id, world.clock.now())  # a runner starts the clock
    step(store, goal_id, world)  # one minute of work
    world.clock.advance(30)
    assert engine.stop_if_exhausted(store, goal_id, world.edges()) is None  # 90 s of 120
    world.clock.advance(31)
    stopped = engine.stop_if_exhausted(store, goal_id, world.edges())
    assert stopped is not None and (stopped.goal.state, stopped.goal.stop_reason) == ("escalated", "timeout")
    assert stopped.goal.spent.active_seconds == 121 and stopped.goal.active_since is None
    assert store.load(TriageItem, stopped.triage_id).stop_reason == "timeout"
    assert world.announced[-1] == ("escalated", "timeout")


def test_a_goal_paused_while_its_checks_ran_keeps_the_record_and_stays_paused(store, goal_id):
    world = World(Checks([True]))
    world.checks.during = lambda: moves.move(store, goal_id, "pause", now=world.clock.now())
    world.oracle.enqueue(YES)
    outcome = step(store, goal_id, world)
    saved = store.load(Goal, goal_id)
    assert (saved.state, saved.stop_reason, saved.escalation) == ("paused", None, None)
    assert [it.number for it in saved.history] == [1] and saved.pending is None and saved.spent.iterations == 1
    assert outcome.goal.state == "paused" and world.announced == [("paused", None)]


class Crash(BaseException):
    """A kill in the middle of an iteration."""


def test_a_crash_mid_iteration_then_a_retry_charges_the_maker_once(store, goal_id):
    world = World(Checks([False], [False]))
    world.oracle.enqueue(Crash(), no())
    with pytest.raises(Crash):
        step(store, goal_id, world, dollars=0.25)
    assert store.load(Goal, goal_id).pending is not None  # the maker's work is held, not lost
    outcome = engine.run_iteration(store, goal_id, edges=world.edges())  # the retry, with no new maker work
    saved = store.load(Goal, goal_id)
    assert outcome.iteration.number == 1 and [it.number for it in saved.history] == [1]
    assert saved.spent.maker_dollars == 0.25 and saved.history[0].maker_cost.dollars == 0.25


def test_the_same_iteration_persisted_twice_counts_once(store, goal_id):
    world = World(Checks([True], [True]))
    world.oracle.enqueue(no("another runner's verdict"), no("this runner's verdict"))
    # While this iteration runs its checks, a second runner takes the same pending iteration to its end.
    world.checks.during = lambda: engine.run_iteration(store, goal_id, edges=world.edges())
    step(store, goal_id, world, dollars=0.25)
    saved = store.load(Goal, goal_id)
    assert [it.number for it in saved.history] == [1] and saved.spent.iterations == 1
    assert saved.history[0].verdict.next_hint == "another runner's verdict"
    # both judges were paid, so both are charged (billed == charged), though the iteration counts once
    assert saved.spent.maker_dollars == 0.25 and saved.spent.oracle_dollars == pytest.approx(0.02)


def test_a_green_run_the_guard_refuses_is_not_judged(store, goal_id):
    guard = Integrity(issues=[IntegrityIssue(kind="test-gone", subject="tests/test_calc.py::test_add",
                                             detail="test_add is gone")])
    world = World(Checks([True]), guard=guard)
    outcome = step(store, goal_id, world)
    assert outcome.decision.action == "continue" and world.oracle.history == []
    assert "test_add is gone" in outcome.decision.hint
