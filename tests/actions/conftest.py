"""Fixtures of the act tests (test_fleet_act.py, test_act_broken.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.actrunner import copy_repository, wheelhouse


@pytest.fixture(scope="session")
def wheels(tmp_path_factory) -> Path:
    """The package's dependencies as wheels, once a test process, for the jobs' offline installs."""
    return wheelhouse(tmp_path_factory.mktemp("wheels"), copy_repository(tmp_path_factory.mktemp("for-wheels")))
