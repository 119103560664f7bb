"""Creating goals (the hard rules) and moving them through their life, through the library."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from goal_convergence.errors import AmbiguousGoal, GoalNotFound, IllegalTransition, InvalidInput
from goal_convergence.goals import creation, listing, lookup, moves, specs
from goal_convergence.models import Goal, parse_iso
from goal_convergence.report import render

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
# A new goal runs its conditions once (for the start census, tested in test_integrity.py): one that costs nothing.
TEST = "true"


def spec(root: Path, objective: str = "make all tests pass", **flags) -> specs.GoalSpec:
    return specs.GoalSpec(objective=objective, project=root, **{"test": TEST, **flags})


def test_defaults(store, git_repo):
    goal = creation.new_goal(store, spec(git_repo))
    assert (goal.budget.max_iterations, goal.budget.max_duration, goal.budget.max_dollars) == (15, "2h", 10.0)
    assert goal.oracle.model == "claude-haiku-5-5" and goal.state == "active" and goal.source == "user"
    assert goal.project_root == str(git_repo) and goal.base_commit and goal.session_id is None
    assert store.load(Goal, goal.goal_id) == goal


def test_the_project_is_the_git_top_level(store, git_repo):
    sub = git_repo / "src" / "deep"
    sub.mkdir(parents=True)
    assert creation.new_goal(store, spec(sub)).project_root == str(git_repo)


def test_a_missing_project_folder_is_refused(store, tmp_path):
    with pytest.raises(InvalidInput, match="does not exist.*--project"):
        creation.new_goal(store, spec(tmp_path / "nope"))


# ---- the hard rules --------------------------------------------------------------------------

def test_a_goal_needs_a_condition(store, tmp_path):
    with pytest.raises(InvalidInput, match="give at least one: --test CMD"):
        creation.new_goal(store, specs.GoalSpec(objective="refactor", project=tmp_path))


@pytest.mark.parametrize("limits", [
    dict(max_iterations=0, max_duration="0s", max_dollars=0),
    dict(max_iterations=0, max_duration="0", max_dollars=0.0, max_tokens=0),
    dict(max_iterations=None, max_duration=None, max_dollars=None),
    dict(max_iterations=0, max_duration="0h0m", max_dollars=0),
])
def test_a_goal_needs_a_budget_limit(store, tmp_path, limits):
    with pytest.raises(InvalidInput, match="at least one budget limit.*--max-iterations N, --max-duration 2h "
                                           "or --max-dollars 10"):
        creation.new_goal(store, spec(tmp_path, **limits))
    assert store.summaries() == []


def test_zero_means_no_limit_on_that_one(store, tmp_path):
    goal = creation.new_goal(store, spec(tmp_path, max_iterations=0, max_duration="0s", max_dollars=2.5))
    assert goal.budget.model_dump() == {"max_iterations": None, "max_duration": None, "max_dollars": 2.5,
                                        "max_tokens": None}


@pytest.mark.parametrize(("limits", "message"), [
    (dict(max_duration="90"), "'90' is not a duration"),
    (dict(max_duration="1.5h"), "not a duration"),
    (dict(max_iterations=-1), "--max-iterations -1 is not a limit"),
    (dict(max_iterations=2.5), "--max-iterations 2.5 is not a whole number"),
    (dict(max_dollars=float("nan")), "--max-dollars nan is not a limit"),
    (dict(max_dollars=float("inf")), "--max-dollars inf is not a limit"),
    (dict(max_tokens=True), "--max-tokens True is not a limit"),
])
def test_bad_budget_values_are_refused(store, tmp_path, limits, message):
    with pytest.raises(InvalidInput, match=message):
        creation.new_goal(store, spec(tmp_path, **limits))


@pytest.mark.parametrize(("oracle", "maker"), [
    ("claude-haiku-5-5", "claude-haiku-5-5"),
    ("claude-haiku-5-5", "claude-haiku-5-5-20251001"),
    ("claude-opus-5-5-20251101", "claude-opus-5-5[1m]"),
    ("claude-sonnet-5-5", "Claude-Sonnet-5-5-latest"),
    ("claude-haiku-5-5", "us.anthropic.claude-haiku-5-5-20251001-v1:0"),
    ("claude-haiku-5-5@20251001", "claude-haiku-5-5"),
    ("haiku", "claude-haiku-5-5"),
    ("claude-opus-5-5", "opus"),
])
def test_the_oracle_must_not_be_the_makers_model(store, tmp_path, oracle, maker):
    with pytest.raises(InvalidInput, match=r"the oracle model .* is the maker's model .*pass --oracle-model"):
        creation.new_goal(store, spec(tmp_path, oracle_model=oracle, maker_model=maker))


@pytest.mark.parametrize(("oracle", "maker"), [
    ("claude-haiku-5-5", "claude-opus-5-5"), ("claude-haiku-5-5", "claude-haiku-4-5"),
    ("claude-sonnet-5-5", "opus"), ("claude-haiku-5-5", None),
])
def test_different_models_are_fine(store, tmp_path, oracle, maker):
    goal = creation.new_goal(store, spec(tmp_path, oracle_model=oracle, maker_model=maker))
    assert (goal.oracle.model, goal.maker.model) == (oracle, maker)


def test_with_no_model_in_play_the_model_rule_does_not_apply(store, tmp_path):
    goal = creation.new_goal(store, spec(tmp_path, oracle_provider="conditions", oracle_model="m", maker_model="m"))
    assert goal.oracle.provider == "conditions"


@pytest.mark.parametrize(("flags", "message"), [
    (dict(objective="  \n"), "the objective is empty"),
    (dict(objective="fix caf\udce9"), "objective: .*unicode.*fix it and try again"),
    (dict(test="  "), "the test command is empty"),
    (dict(checks=[""]), "the check command is empty"),
    (dict(coverage=101), "--coverage 101 is not a percentage"),
    (dict(coverage=float("nan")), "is not a percentage"),
    (dict(coverage_cmd="pytest --cov"), "--coverage-cmd needs --coverage PCT"),
    (dict(oracle_model=""), "model: .*at least 1 character"),
    (dict(oracle_provider="command"), "--oracle command needs --oracle-cmd CMD"),
    (dict(stuck_after=0), "stuck_after: .*greater than or equal to 1"),
])
def test_bad_input_is_refused_with_a_clear_message(store, tmp_path, flags, message):
    with pytest.raises(InvalidInput, match=message):
        creation.new_goal(store, spec(tmp_path, **flags))


def test_coverage_uses_the_projects_command_unless_given(store, tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    goal = creation.new_goal(store, spec(tmp_path, test=None, coverage=85, checks=["./smoke.sh"]))
    assert [(c.type, c.threshold, c.command) for c in goal.stopping_conditions] == [
        ("coverage_threshold", 85.0, "python -m pytest -q --cov --cov-report=term"),
        ("custom_command", None, "./smoke.sh")]


def test_one_session_works_on_one_goal(store, tmp_path):
    creation.new_goal(store, spec(tmp_path, session_id="s1"))
    with pytest.raises(InvalidInput, match="this session already works on goal-"):
        creation.new_goal(store, spec(tmp_path, session_id="s1"))
    assert creation.new_goal(store, spec(tmp_path, session_id="s2")).session_id == "s2"


# ---- finding the goal meant ------------------------------------------------------------------

def test_no_id_means_the_open_goal_of_this_project(store, tmp_path):
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    mine.mkdir()
    theirs.mkdir()
    goal = creation.new_goal(store, spec(mine))
    creation.new_goal(store, spec(theirs))
    assert lookup.resolve(store, None, project=mine).goal_id == goal.goal_id
    moves.move(store, goal.goal_id, "abandon")
    with pytest.raises(GoalNotFound, match="no active or paused goal in .*goal new OBJECTIVE"):
        lookup.resolve(store, None, project=mine)


def test_several_open_goals_are_an_error_listing_them(store, tmp_path):
    made = [creation.new_goal(store, spec(tmp_path, objective=f"goal {i}")) for i in range(2)]
    with pytest.raises(AmbiguousGoal) as raised:
        lookup.resolve(store, None, project=tmp_path)
    for goal in made:
        assert goal.goal_id in str(raised.value) and goal.objective in str(raised.value)
    assert lookup.resolve(store, made[1].goal_id).goal_id == made[1].goal_id


def test_list_goals_is_newest_first_and_hides_ended_goals(store, tmp_path):
    first, second = (creation.new_goal(store, spec(tmp_path, objective=o), T0 + timedelta(minutes=i))
                     for i, o in enumerate(["old", "new"]))
    moves.move(store, first.goal_id, "abandon")
    assert [s["goalId"] for s in listing.goals(store.root, False, [])] == [second.goal_id]
    listed = listing.goals(store.root, True, [])
    assert [s["goalId"] for s in listed] == [second.goal_id, first.goal_id]
    assert "stamp" not in listed[0] and listed[1]["state"] == "failed" and listed[1]["stopReason"] == "cancelled"


# ---- pause, resume, abandon ------------------------------------------------------------------

def test_pause_and_resume_through_the_store(store, tmp_path):
    goal = creation.new_goal(store, spec(tmp_path, session_id="s1"), T0)
    paused = moves.move(store, goal.goal_id, "pause", T0 + timedelta(seconds=30))
    assert paused.state == "paused" and paused.spent.active_seconds == pytest.approx(30)
    resumed = moves.resume(store, goal.goal_id, session_id="s2", now=T0 + timedelta(hours=5))
    assert resumed.state == "active" and resumed.session_id == "s2"
    assert resumed.spent.active_seconds == pytest.approx(30), "paused time is not charged"
    assert parse_iso(resumed.active_since) == T0 + timedelta(hours=5)
    with pytest.raises(IllegalTransition, match="cannot abandon .* it is failed"):
        moves.move(store, moves.move(store, goal.goal_id, "abandon").goal_id, "abandon")


def spend_all_iterations(store, goal):
    def change(g: Goal) -> None:
        g.spent.iterations = g.budget.max_iterations
        g.state, g.stop_reason = "escalated", "ceiling"

    store.update(Goal, goal.goal_id, change)


def test_an_escalated_goal_resumes_only_with_budget_left(store, tmp_path):
    goal = creation.new_goal(store, spec(tmp_path, max_iterations=3))
    spend_all_iterations(store, goal)
    with pytest.raises(IllegalTransition, match=f"spent its budget \\(ceiling\\).*goal resume {goal.goal_id} "
                                                f"--max-iterations 13"):
        moves.resume(store, goal.goal_id)
    assert store.load(Goal, goal.goal_id).state == "escalated"
    resumed = moves.resume(store, goal.goal_id, raise_budget={"max_iterations": 5})
    assert (resumed.state, resumed.stop_reason, resumed.budget.max_iterations) == ("active", None, 5)


def test_a_raised_budget_follows_the_same_rules(store, tmp_path):
    goal = creation.new_goal(store, spec(tmp_path, max_iterations=3, max_duration="0", max_dollars=0))
    spend_all_iterations(store, goal)
    with pytest.raises(InvalidInput, match="at least one budget limit"):
        moves.resume(store, goal.goal_id, raise_budget={"max_iterations": 0})
    with pytest.raises(InvalidInput, match="not a duration"):
        moves.resume(store, goal.goal_id, raise_budget={"max_duration": "soon"})
    resumed = moves.resume(store, goal.goal_id, raise_budget={"max_iterations": 0, "max_duration": "1h"})
    assert (resumed.budget.max_iterations, resumed.budget.max_duration) == (None, "1h")


def test_status_shows_the_running_clock(store, tmp_path):
    goal = creation.new_goal(store, spec(tmp_path, session_id="s1"), T0)
    goal.spent.active_seconds = 30
    text = render.status(goal, now=T0 + timedelta(seconds=90))
    assert f"{goal.goal_id}: make all tests pass" in text and "time 2m00s/2h" in text
    assert "iterations 0/15" in text and f"[0] test_pass: {TEST}" in text
