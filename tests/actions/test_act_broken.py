"""The act tests can fail: the same run with one step of the workflow broken (the plan action's command
misspelt, in a copy of the repository) fails every check of tests/actions/test_fleet_act.py."""

from __future__ import annotations

import inspect

import pytest

from tests.actions import test_fleet_act
from tests.actrunner import copy_repository

pytestmark = pytest.mark.act


@pytest.fixture(scope="module")
def broken(tmp_path_factory, wheels):
    action = copy_repository(tmp_path_factory.mktemp("action"))
    plan = action / "plan" / "action.yml"
    text = plan.read_text()
    assert text.count("run: goal action plan\n") == 1
    plan.write_text(text.replace("run: goal action plan\n", "run: goal action plna\n"))
    return test_fleet_act.run_fleets(tmp_path_factory.mktemp("act"), action, wheels)


CHECKS = [f for name, f in inspect.getmembers(test_fleet_act, inspect.isfunction) if name.startswith("test_")]


def test_there_are_checks_to_break():
    assert len(CHECKS) >= 8


@pytest.mark.parametrize("check", CHECKS, ids=lambda f: f.__name__)
def test_a_broken_step_fails_the_check(broken, check):
    _, run = broken
    assert run.exit_code != 0 and "No such command 'plna'" in run.text, run.tail()
    with pytest.raises((AssertionError, ValueError, KeyError)):
        check(broken)
