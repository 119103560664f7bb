"""`goal hook codex EVENT`: Codex CLI's hooks through the `goal` console script as Codex runs them (a
child process, the hook's JSON on stdin), with real goals in a temp home."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from goal_convergence.agents.codex import hooks
from goal_convergence.goals import creation, specs
from goal_convergence.models import Goal
from goal_convergence.storage.store import Store

SESSION = "01a247b2-d2a9-7a33-9177-d75c147d26a7"


def hook(event: str, payload: dict | str, cwd: Path) -> tuple[dict, subprocess.CompletedProcess]:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    done = subprocess.run([sys.executable, "-m", "goal_convergence", "hook", "codex", event], input=data, cwd=cwd,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return (json.loads(done.stdout) if done.stdout.strip() else {}), done


def payload(event: str, cwd: Path, **fields) -> dict:
    return {"session_id": SESSION, "transcript_path": None, "cwd": str(cwd), "hook_event_name": event,
            "model": "gpt-5.1-codex", "permission_mode": "bypassPermissions", **fields}


@pytest.fixture
def bound(git_repo, isolated_home) -> Goal:
    return creation.new_goal(Store(), specs.GoalSpec(objective="fix it", project=git_repo, test="true",
                                                     oracle_provider="conditions", session_id=SESSION, agent="codex"))


def test_a_session_without_a_goal_gets_no_answer_at_any_event(git_repo, isolated_home):
    stop = payload("Stop", git_repo, stop_hook_active=False, last_assistant_message="hi")
    assert hook("stop", stop, git_repo)[0] == {}
    assert hook("user-prompt-submit", payload("UserPromptSubmit", git_repo, prompt="say $goal hi"), git_repo)[0] == {}
    shell = payload("PreToolUse", git_repo, tool_name="Bash", tool_input={"command": "goal pause"}, tool_use_id="c1")
    assert hook("pre-tool-use", shell, git_repo)[0] == {}
    assert hook("session-start", payload("SessionStart", git_repo, source="startup"), git_repo)[0] == {}


def test_an_unknown_event_or_broken_input_is_one_line_and_never_breaks_the_session(git_repo, isolated_home):
    answer, _ = hook("session-end", {}, git_repo)
    assert "unknown Codex hook 'session-end'" in answer["systemMessage"]
    answer, _ = hook("user-prompt-submit", '{"session_id": 5, "prompt": "$goal status"}', git_repo)
    assert "the Codex user-prompt-submit hook got input it cannot use" in answer["systemMessage"]


def test_a_goal_command_starts_a_codex_goal_and_tells_the_model_in_codexs_words(git_repo, isolated_home):
    answer, _ = hook("user-prompt-submit", payload("UserPromptSubmit", git_repo,
                                                   prompt="$goal make it right --test 'true' --oracle conditions"),
                     git_repo)
    [goal] = Store().iter_all(Goal)
    assert (goal.objective, goal.session_id, goal.agent) == ("make it right", SESSION, "codex")
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert answer["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert f"started goal {goal.goal_id}, bound to this session" in context
    assert "/goal-convergence:goal" not in context and "$goal" in context
    assert answer["systemMessage"].startswith(f"goal-convergence: started {goal.goal_id}")
    assert goal.budget.max_tokens is None  # the model has a price: the dollars are counted


def test_a_model_with_no_price_fails_closed_into_a_token_budget_with_a_clear_message(git_repo, isolated_home):
    prompt = "$goal make it right --test 'true' --oracle conditions"
    answer, _ = hook("user-prompt-submit", payload("UserPromptSubmit", git_repo, prompt=prompt, model="gpt-9-nano"),
                     git_repo)
    [goal] = Store().iter_all(Goal)
    assert goal.budget.max_tokens == hooks.FALLBACK_TOKENS
    assert "no price for the model 'gpt-9-nano', so the maker's spend is counted in tokens" in answer["systemMessage"]
    assert "prices.json" in answer["systemMessage"]


def test_the_maker_is_denied_its_goal_through_the_shell_and_through_apply_patch(bound, git_repo, gc_home):
    goal_file = gc_home / "goals" / f"{bound.goal_id}.json"
    shell = payload("PreToolUse", git_repo, tool_name="Bash", tool_input={"command": f"goal pause {bound.goal_id}"},
                    tool_use_id="c1")
    answer, _ = hook("pre-tool-use", shell, git_repo)
    out = answer["hookSpecificOutput"]
    assert (out["hookEventName"], out["permissionDecision"]) == ("PreToolUse", "deny")
    assert "runs the goal-convergence CLI (`goal pause`)" in out["permissionDecisionReason"]
    reason = out["permissionDecisionReason"]
    assert "$goal" in reason and "/goal-convergence:goal" not in reason

    patch = (f"*** Begin Patch\n*** Update File: calc.py\n@@\n-a\n+b\n*** Update File: {goal_file}\n@@\n"
             f"-\"state\": \"active\"\n+\"state\": \"converged\"\n*** End Patch\n")
    patched = payload("PreToolUse", git_repo, tool_name="apply_patch", tool_input={"command": patch}, tool_use_id="c2")
    answer, _ = hook("pre-tool-use", patched, git_repo)
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert f"writes `{goal_file}`" in answer["hookSpecificOutput"]["permissionDecisionReason"]

    own = patch.split(f"*** Update File: {goal_file}")[0] + "*** End Patch\n"
    fine = payload("PreToolUse", git_repo, tool_name="apply_patch", tool_input={"command": own}, tool_use_id="c3")
    assert hook("pre-tool-use", fine, git_repo)[0] == {}


def test_the_session_start_notice_names_the_open_goal_and_the_skill_to_resume_it(bound, git_repo):
    answer, _ = hook("session-start", {**payload("SessionStart", git_repo, source="startup"), "session_id": "other"},
                     git_repo)
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert f"- {bound.goal_id} (active in another session)" in context
    assert f"$goal resume {bound.goal_id}" in context
    assert answer["systemMessage"] == "goal-convergence: 1 open goal in this project (1 active); $goal list"


def test_the_codex_fast_path_loads_only_the_standard_library():
    probe = ("import sys; sys.path.insert(0, sys.argv[1]); from goal_convergence.agents.codex import fast, dispatch; "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('pydantic', 'click', 'anthropic', 'jsonschema', 'filelock', 'httpx')))")
    root = Path(hooks.__file__).parents[3]
    out = subprocess.run([sys.executable, "-S", "-c", probe, str(root)], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_a_status_turn_is_no_iteration_unless_the_model_called_a_tool(bound, git_repo, tmp_path):
    rollout = tmp_path / "rollout-2026-12-05T19-33-51-x.jsonl"
    rollout.write_text('{"type":"session_meta","payload":{}}\n')
    fields = {"transcript_path": str(rollout)}
    stop = payload("Stop", git_repo, stop_hook_active=False, last_assistant_message="ok", **fields)

    hook("user-prompt-submit", payload("UserPromptSubmit", git_repo, prompt="$goal status", **fields), git_repo)
    with rollout.open("a") as fh:
        fh.write('{"type":"response_item","payload":{"type":"message","role":"assistant","content":[]}}\n')
    assert hook("stop", stop, git_repo)[0] == {}
    assert Store().load(Goal, bound.goal_id).spent.iterations == 0

    hook("user-prompt-submit", payload("UserPromptSubmit", git_repo, prompt="$goal status", **fields), git_repo)
    with rollout.open("a") as fh:
        fh.write('{"type":"response_item","payload":{"type":"function_call","name":"exec_command",'
                 '"arguments":"{\\"cmd\\":\\"ls\\"}","call_id":"c1"}}\n')
    answer, _ = hook("stop", stop, git_repo)
    assert Store().load(Goal, bound.goal_id).spent.iterations == 1
    assert "converged after 1 iteration" in answer["systemMessage"]
