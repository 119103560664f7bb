"""Shared fixtures. Tests never touch the real ~/.claude: HOME and GOAL_CONVERGENCE_HOME point at a
temp folder for every test."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

pytest_plugins = ["tests.fakeapi"]


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GOAL_CONVERGENCE_HOME", str(home / ".claude"))
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_SESSION_ID",
                "CLAUDE_PROJECT_DIR", "CLAUDE_PLUGIN_ROOT", "CLAUDE_PLUGIN_DATA", "CLAUDECODE"):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture
def gc_home(isolated_home) -> Path:
    return Path(os.environ["GOAL_CONVERGENCE_HOME"])


@pytest.fixture
def store(gc_home):
    from goal_convergence.store import Store

    return Store(gc_home)


@pytest.fixture
def make_goal(tmp_path):
    """A factory of valid goals built directly from the model (not through `goal new`), for tests of
    the store and the lifecycle; keyword arguments override any field."""
    from goal_convergence.models import Budget, Goal, OracleConfig, StoppingCondition, new_id, now_iso

    def make(**fields) -> Goal:
        stamp = now_iso()
        base = dict(goal_id=new_id("goal-"), objective="make all tests pass",
                    stopping_conditions=[StoppingCondition(type="test_pass", command="python -m pytest -q")],
                    budget=Budget(max_iterations=15, max_duration="2h", max_dollars=10.0),
                    oracle=OracleConfig(model="claude-haiku-5-5"), project_root=str(tmp_path),
                    created_at=stamp, updated_at=stamp)
        return Goal(**{**base, **fields})

    return make


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def git_repo(tmp_path) -> Path:
    """An empty git repository with one commit, in a temp folder."""
    repo = tmp_path / "project"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("fixture\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "init")
    return repo


def find_claude() -> str | None:
    """The real Claude Code binary: $CLAUDE_BIN, the npm package in the checkout, or PATH."""
    candidates = [os.environ.get("CLAUDE_BIN"),
                  str(REPO / "node_modules/@anthropic-ai/claude-code-linux-x64/claude"),
                  shutil.which("claude")]
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


@pytest.fixture
def claude_bin() -> str:
    found = find_claude()
    if not found:
        if os.environ.get("CI"):
            pytest.fail("the Claude Code binary is missing; .ci/run installs it from npm")
        pytest.skip("Claude Code binary not installed (npm install @anthropic-ai/claude-code)")
    return found
