"""A 200 reply from the Messages API that is not a well-formed message is a judge error of that
iteration, charged what it cost, in the oracle, in `goal run` and in the Stop hook."""

from __future__ import annotations

import os

import pytest

from goal_convergence.agents.claude_code import hooks
from goal_convergence.oracle.verdict import JudgeError
from tests.fakeapi import MALFORMED, malformed
from tests.agents.claude_code.test_hooks import load as hook_load, make_goal as hook_goal, project as hook_project  # noqa: F401 (fixture)
from tests.agents.claude_code.test_hooks import run_hook, stop_input
from tests.oracle.test_oracle import MODEL, api_env, judge, project  # noqa: F401 (fixtures)
from tests.cli.test_run import env, goal, load, new_goal, project as run_project  # noqa: F401 (fixtures)

CHARGED = {"truncated": False, "empty": False, "not-json": False, "not-an-object": False, "no-usage": False,
           "usage-wrong-types": False, "content-not-a-list": True, "block-without-type": True}


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_a_malformed_reply_is_a_judge_error_charged_what_it_cost(api_env, project, kind):  # noqa: F811
    api_env.enqueue(malformed(kind))
    with pytest.raises(JudgeError, match="not a well-formed message") as exc:
        judge(project)
    # usage when the reply has it (1,000 in, 100 out), else the most one call could have cost
    assert exc.value.cost.dollars > 0
    assert (exc.value.cost.tokens == 1100) is CHARGED[kind]
    assert len(api_env.messages) == 1


def test_goal_run_records_each_malformed_reply_as_a_judge_error(run_project, env, fake_api):  # noqa: F811
    fake_api.enqueue(malformed("empty"), malformed("truncated"), malformed("no-usage"))
    gid = new_goal()
    run = goal("run", gid, "--maker-cmd", "date +%s%N >> notes.txt", "--json")
    assert run.returncode == 7, run.stdout + run.stderr
    doc = load(gid)
    assert [it["judgeError"] is not None for it in doc["history"]] == [True, True, True]
    assert doc["pending"] is None and doc["state"] == "escalated" and doc["stopReason"] == "judge-error"
    assert doc["spent"]["oracleDollars"] > 0


def test_the_stop_hook_records_a_malformed_reply_as_a_judge_error(hook_project, fake_api):  # noqa: F811
    goal_ = hook_goal(hook_project, oracle_provider="anthropic", oracle_model=MODEL)
    fake_api.enqueue(malformed("content-not-a-list"))
    hook_env = {**os.environ, "ANTHROPIC_BASE_URL": fake_api.url, "ANTHROPIC_API_KEY": "x",
           "GOAL_CONVERGENCE_ORACLE_RETRIES": "0"}
    answer = run_hook("stop", stop_input(hook_project), env=hook_env)
    assert hooks.feedback(answer)  # the session carries on
    done = hook_load(goal_.goal_id)
    assert len(done.history) == 1 and done.history[0].judge_error and done.pending is None
    assert done.spent.oracle_dollars > 0
