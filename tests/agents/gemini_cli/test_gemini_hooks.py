"""Gemini CLI's hooks through `goal hook gemini <event>` as Gemini CLI runs them (JSON on stdin, JSON on stdout),
with real goals: the input renamed to Claude Code's terms, the answers reshaped to Gemini's."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from goal_convergence.agents.gemini_cli import fast
from goal_convergence.goals import creation, specs
from goal_convergence.models import Goal
from goal_convergence.storage.store import Store

GOAL = [sys.executable, "-m", "goal_convergence", "hook", "gemini"]


def hook(event: str, payload: dict | bytes) -> dict:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    done = subprocess.run([*GOAL, event], input=data, capture_output=True, check=True, env=os.environ.copy())
    return json.loads(done.stdout)  # always one JSON object: Gemini CLI reads stderr when stdout is empty


@pytest.fixture
def owned(git_repo, gc_home) -> Goal:
    return creation.new_goal(Store(), specs.GoalSpec(objective="x", project=git_repo, checks=["true"],
                                                     oracle_provider="conditions", session_id="the-owner"))


@pytest.mark.parametrize(("tool", "given", "expected"), [
    ("run_shell_command", {"command": "ls"}, ("Bash", {"command": "ls"})),
    ("write_file", {"file_path": "/x", "content": ""}, ("Write", {"file_path": "/x", "content": ""})),
    ("replace", {"file_path": "/x"}, ("Edit", {"file_path": "/x"})),
    ("read_file", {"file_path": "/x"}, ("Read", {"file_path": "/x"})),
    ("glob", {"pattern": "*.json", "dir_path": "/h"}, ("Glob", {"path": "/h", "pattern": "*.json"})),
    ("grep_search", {"pattern": "expect", "dir_path": "/h"}, ("Grep", {"path": "/h"})),
    ("list_directory", {"dir_path": "/h"}, ("Grep", {"path": "/h"})),
    ("read_many_files", {"include": ["src/*.py", "/h/goals/*"]}, ("Glob", [{"pattern": "src/*.py"},
                                                                          {"pattern": "/h/goals/*"}])),
])
def test_each_tool_reaches_the_rules_as_claude_codes_tool_of_the_same_reach(tool, given, expected):
    out = fast.claude_input("before-tool", {"session_id": "s", "tool_name": tool, "tool_input": given})
    assert (out["tool_name"], out["tool_input"]) == expected


@pytest.mark.parametrize(("prompt", "args"), [
    ("[goal-convergence:goal]fix it --test 'a; b' $(x)[/goal-convergence:goal]\n\nThe extension...", "fix it --test 'a; b' $(x)"),
    ("<hook_context>open goals</hook_context>\n\n/goal resume", "resume"),
    ("/goal", ""),
    ("please /goal resume", None),
    ("/goals", None),
    (None, None),
])
def test_the_goal_commands_raw_arguments_are_found_in_the_prompt(prompt, args):
    assert fast.command_args(prompt) == args


def test_a_stop_that_carries_on_is_a_deny_whose_reason_is_the_next_prompt_naming_the_gemini_command():
    claude = {"systemMessage": "goal-convergence: g iteration 1 not done",
              "hookSpecificOutput": {"hookEventName": "Stop",
                                     "additionalContext": "not done yet; /goal-convergence:goal pause to stop"}}
    assert fast.gemini_answer("after-agent", claude) == {"systemMessage": "goal-convergence: g iteration 1 not done",
                                                         "decision": "deny", "reason": "not done yet; /goal pause to stop"}
    assert fast.gemini_answer("after-agent", {}) == {}  # let it stop


def test_the_owning_session_is_denied_its_judge_and_others_pass(owned, git_repo, gc_home):
    payload = {"session_id": "the-owner", "cwd": str(git_repo), "hook_event_name": "BeforeTool",
               "tool_name": "run_shell_command", "tool_input": {"command": f"goal abandon {owned.goal_id}"}}
    told = hook("before-tool", payload)
    assert told["decision"] == "deny" and "runs the goal-convergence CLI" in told["reason"]
    assert "/goal-convergence:goal" not in told["reason"] and "with /goal)" in told["reason"]
    goal_file = gc_home / "goals" / f"{owned.goal_id}.json"
    assert hook("before-tool", {**payload, "tool_name": "read_file",
                                "tool_input": {"file_path": str(goal_file)}})["decision"] == "deny"
    many = {**payload, "tool_name": "read_many_files", "tool_input": {"include": ["*.py", str(gc_home / "goals/*")]}}
    assert hook("before-tool", many)["decision"] == "deny"  # one of several patterns reaches the goal files
    assert hook("before-tool", {**many, "tool_input": {"include": ["*.py", "docs/*"]}}) == {}
    assert hook("before-tool", {**payload, "tool_input": {"command": "git status"}}) == {}
    assert hook("before-tool", {**payload, "session_id": "another"}) == {}


def test_bad_input_and_unknown_events_never_break_the_session():
    assert hook("after-agent", b"not json") == {}
    assert hook("before-tool", b"[1, 2]") == {}
    assert "unknown Gemini CLI hook" in hook("after-turn", {"session_id": "s"})["systemMessage"]


def test_the_goal_command_starts_a_goal_held_by_the_gemini_session_and_a_claude_resume_takes_it(git_repo, gc_home):
    payload = {"session_id": "gem-1", "cwd": str(git_repo), "hook_event_name": "BeforeAgent",
               "prompt": "[goal-convergence:goal]don't break it --check true --oracle conditions[/goal-convergence:goal]"}
    told = hook("before-agent", payload)
    assert told["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    assert "started goal" in told["hookSpecificOutput"]["additionalContext"]
    [goal] = Store().iter_all(Goal)
    assert (goal.objective, goal.session_id, goal.agent) == ("don't break it", "gem-1", "gemini-cli")
    assert hook("before-agent", {**payload, "prompt": "just talk"}) == {}  # no command: nothing to do

    # the same goal resumed from Claude Code's slash command: now Claude Code's session holds it
    claude = {"session_id": "cc-1", "cwd": str(git_repo), "command_name": "goal-convergence:goal",
              "command_args": f"resume {goal.goal_id}"}
    subprocess.run([sys.executable, "-m", "goal_convergence", "hook", "prompt-expansion"],
                   input=json.dumps(claude).encode(), capture_output=True, check=True)
    moved = Store().load(Goal, goal.goal_id)
    assert (moved.session_id, moved.agent) == ("cc-1", "claude-code")


def test_session_start_lists_the_projects_open_goals_for_the_model(owned, git_repo):
    told = hook("session-start", {"session_id": "new", "cwd": str(git_repo), "source": "startup"})
    assert told["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert f"{owned.goal_id} (active in another session)" in told["hookSpecificOutput"]["additionalContext"]
    assert f"/goal resume {owned.goal_id}" in told["hookSpecificOutput"]["additionalContext"]
