"""The plugin's launcher (scripts/goal-launch.py) and its private venv: built beside the one in use,
switched to in one rename, rebuilt when the plugin's version or content changes (issue 12 item 11).

Each test copies the plugin (what a local-path route loads: `--plugin-dir`, `marketplace add /path`)
and runs that copy's launcher as Claude Code does, or calls its functions in a fresh interpreter."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO


@pytest.fixture
def plugin(tmp_path) -> Path:
    root = tmp_path / "plugin"
    for part in ("scripts", ".claude-plugin", "goal_convergence"):
        shutil.copytree(REPO / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", root)
    return root


@pytest.fixture
def data(tmp_path) -> Path:
    return tmp_path / "plugin-data"


def env(data: Path) -> dict:
    return {**os.environ, "PATH": "/nonexistent", "CLAUDE_PLUGIN_DATA": str(data)}


def call(plugin: Path, data: Path, expr: str):
    """``expr`` evaluated by the copy's launcher module, in a fresh interpreter."""
    code = ("import importlib.util, json, sys\n"
            f"spec = importlib.util.spec_from_file_location('launch', {str(plugin / 'scripts' / 'goal-launch.py')!r})\n"
            "launch = importlib.util.module_from_spec(spec); spec.loader.exec_module(launch)\n"
            f"print(json.dumps({expr}))\n")
    done = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, env=env(data), check=True)
    return json.loads(done.stdout)


def hook(plugin: Path, data: Path, event: str, payload: dict) -> dict | None:
    done = subprocess.run([sys.executable, "-S", str(plugin / "scripts" / "goal-launch.py"), "hook", event],
                          input=json.dumps(payload), capture_output=True, text=True, env=env(data), timeout=60)
    assert done.returncode == 0 and "Traceback" not in done.stdout + done.stderr, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else None


def fake_build(data: Path, name: str, says: str) -> Path:
    """A build whose `goal` answers every hook with ``says``."""
    goal = data / "venvs" / name / "bin" / "goal"
    goal.parent.mkdir(parents=True)
    goal.write_text(f"#!/bin/sh\ncat >/dev/null\necho '{json.dumps({'systemMessage': says})}'\n")
    goal.chmod(0o755)
    return goal


def test_the_build_is_keyed_on_the_plugins_version_and_content_not_its_folder(plugin, data):
    first = call(plugin, data, "launch.build_key()")
    assert first.startswith("0.1.0-") and call(plugin, data, "launch.build_key()") == first
    (plugin / "goal_convergence" / "text.py").write_text("# changed by an update\n", encoding="utf-8")
    changed = call(plugin, data, "launch.build_key()")
    assert changed != first
    manifest = json.loads((plugin / ".claude-plugin" / "plugin.json").read_text())
    (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps({**manifest, "version": "0.2.0"}))
    bumped = call(plugin, data, "launch.build_key()")
    assert bumped.startswith("0.2.0-") and bumped != changed


def test_an_update_of_a_local_path_plugin_asks_for_a_new_build_while_the_old_one_serves(plugin, data):
    key = call(plugin, data, "launch.build_key()")
    goal = fake_build(data, key, "built")
    (data / "venv.current").write_text(key + "\n")
    assert call(plugin, data, "[launch.find_goal(), launch.needs_install(launch.find_goal())]") == [str(goal), False]
    (plugin / "goal_convergence" / "text.py").write_text("# changed by an update\n", encoding="utf-8")
    assert call(plugin, data, "[launch.find_goal(), launch.needs_install(launch.find_goal())]") == [str(goal), True]


def test_a_stop_during_a_rebuild_runs_with_the_old_build_and_the_switch_is_one_rename(plugin, data, git_repo):
    from goal_convergence.goals import creation, specs
    from goal_convergence.storage.store import Store

    creation.new_goal(Store(), specs.GoalSpec(objective="x", project=git_repo, checks=["true"],
                                           oracle_provider="conditions", session_id="s-1"))
    fake_build(data, "0.1.0-old", "old build")
    (data / "venv.current").write_text("0.1.0-old\n")
    fake_build(data, "0.0.9-older", "older build")
    half = data / "venvs" / "0.2.0-new" / "bin"
    half.mkdir(parents=True)  # the new build, half installed: no `goal` yet
    stop = {"session_id": "s-1", "cwd": str(git_repo), "transcript_path": str(git_repo / "t.jsonl")}
    assert hook(plugin, data, "stop", stop) == {"systemMessage": "old build"}

    shutil.rmtree(half.parent)
    fake_build(data, "0.2.0-new", "new build")
    call(plugin, data, "launch.switch('0.2.0-new')")
    assert (data / "venv.current").read_text() == "0.2.0-new\n"
    assert hook(plugin, data, "stop", stop) == {"systemMessage": "new build"}
    # the build it replaced stays (a hook may still run from it); older ones go
    assert sorted(p.name for p in (data / "venvs").iterdir()) == ["0.1.0-old", "0.2.0-new"]


def test_while_the_venv_builds_a_slash_command_says_so_and_to_try_again(plugin, data, git_repo):
    data.mkdir()
    (data / "installing").touch()
    payload = {"session_id": "s-1", "cwd": str(git_repo), "command_name": "goal-convergence:goal",
               "command_args": "fix the bug"}
    answer = hook(plugin, data, "prompt-expansion", payload)
    said = answer["systemMessage"] + answer["hookSpecificOutput"]["additionalContext"]
    assert "is being installed" in said and "try again in a moment, no restart needed" in said
    assert "pipx" not in said and "restart the session" not in said


def test_the_venv_of_an_older_launcher_serves_until_a_build_replaces_it_and_goes_one_update_later(plugin, data):
    legacy = data / "venv" / "bin" / "goal"
    legacy.parent.mkdir(parents=True)
    legacy.write_text("#!/bin/sh\n")
    legacy.chmod(0o755)
    (data / "venv" / ".installed").write_text("/old/plugin/root\n")
    assert call(plugin, data, "[launch.find_goal(), launch.needs_install(launch.find_goal())]") == [str(legacy), True]
    fake_build(data, "0.2.0-a", "a")
    call(plugin, data, "launch.switch('0.2.0-a')")
    assert legacy.exists()  # a hook may still be running from it
    fake_build(data, "0.2.1-b", "b")
    call(plugin, data, "launch.switch('0.2.1-b')")
    assert not (data / "venv").exists()
    assert call(plugin, data, "launch.find_goal()") == str(data / "venvs" / "0.2.1-b" / "bin" / "goal")
