"""Settings from the environment: one validated model, checked where a command or a hook starts."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from goal_convergence.agents.claude_code import hooks
from goal_convergence.cli.app import cli
from goal_convergence.errors import InvalidInput
from goal_convergence.goals import creation, specs
from goal_convergence.models import Goal
from goal_convergence.storage import config
from goal_convergence.storage.store import Store


def test_unset_or_empty_settings_are_the_defaults(monkeypatch):
    monkeypatch.setenv("GOAL_CONVERGENCE_ORACLE_TIMEOUT", " ")
    monkeypatch.delenv("GOAL_CONVERGENCE_ORACLE_RETRIES", raising=False)
    monkeypatch.delenv("GOAL_CONVERGENCE_NOTIFY_TIMEOUT", raising=False)
    assert config.env_settings() == config.EnvSettings(oracle_timeout=120, oracle_retries=4, notify_timeout=10)


def test_settings_are_read_again_when_the_environment_changes(monkeypatch):
    monkeypatch.setenv("GOAL_CONVERGENCE_ORACLE_TIMEOUT", "2.5")
    monkeypatch.setenv("GOAL_CONVERGENCE_ORACLE_RETRIES", "0")
    monkeypatch.setenv("GOAL_CONVERGENCE_NOTIFY_TIMEOUT", "1")
    first = config.env_settings()
    assert (first.oracle_timeout, first.oracle_retries, first.notify_timeout) == (2.5, 0, 1)
    assert config.env_settings() is first  # parsed once per value
    monkeypatch.setenv("GOAL_CONVERGENCE_NOTIFY_TIMEOUT", "30")
    assert config.env_settings().notify_timeout == 30


@pytest.mark.parametrize(("variable", "value", "example"), [
    ("GOAL_CONVERGENCE_ORACLE_TIMEOUT", "soon", "GOAL_CONVERGENCE_ORACLE_TIMEOUT=120"),
    ("GOAL_CONVERGENCE_ORACLE_TIMEOUT", "0", "GOAL_CONVERGENCE_ORACLE_TIMEOUT=120"),
    ("GOAL_CONVERGENCE_ORACLE_RETRIES", "-1", "GOAL_CONVERGENCE_ORACLE_RETRIES=4"),
    ("GOAL_CONVERGENCE_ORACLE_RETRIES", "2.5", "GOAL_CONVERGENCE_ORACLE_RETRIES=4"),
    ("GOAL_CONVERGENCE_NOTIFY_TIMEOUT", "inf", "GOAL_CONVERGENCE_NOTIFY_TIMEOUT=10"),
    ("GOAL_CONVERGENCE_NOTIFY_TIMEOUT", "nan", "GOAL_CONVERGENCE_NOTIFY_TIMEOUT=10"),
])
def test_a_bad_setting_names_its_variable_and_a_good_value(monkeypatch, variable, value, example):
    monkeypatch.setenv(variable, value)
    with pytest.raises(InvalidInput) as raised:
        config.env_settings()
    assert f"{variable}={value!r}" in str(raised.value) and example in str(raised.value)


@pytest.fixture
def active_goal(git_repo) -> Goal:
    spec = specs.GoalSpec(objective="create fixed.txt", project=git_repo, checks=["test -f fixed.txt"],
                          oracle_provider="conditions", session_id="s-1")
    return creation.new_goal(Store(), spec)


def test_a_command_with_a_bad_setting_stops_before_it_does_anything(monkeypatch, active_goal):
    monkeypatch.setenv("GOAL_CONVERGENCE_NOTIFY_TIMEOUT", "ten")
    result = CliRunner().invoke(cli, ["abandon", active_goal.goal_id], standalone_mode=False)
    assert isinstance(result.exception, InvalidInput) and result.exception.exit_code == 65
    assert "GOAL_CONVERGENCE_NOTIFY_TIMEOUT='ten'" in str(result.exception)
    assert Store().load(Goal, active_goal.goal_id) == active_goal  # not abandoned halfway: not touched at all


def test_a_hook_with_a_bad_setting_stops_before_it_charges_or_checks_anything(monkeypatch, active_goal, git_repo):
    monkeypatch.setenv("GOAL_CONVERGENCE_ORACLE_RETRIES", "many")
    stop = {"session_id": "s-1", "cwd": str(git_repo), "last_assistant_message": "Done."}
    with pytest.raises(InvalidInput, match="GOAL_CONVERGENCE_ORACLE_RETRIES='many'"):
        hooks.run("stop", json.dumps(stop).encode())
    assert Store().load(Goal, active_goal.goal_id) == active_goal
