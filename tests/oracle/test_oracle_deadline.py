"""The oracle's HTTP has a deadline for the whole call, follows no redirect and reads no reply past its cap; every
judge's verdict is held to its field caps before it is stored or sent (issue 27, part A, first class)."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

from goal_convergence.agents.claude_code import hooks
from goal_convergence.oracle.api import MAX_REPLY_BYTES
from goal_convergence.oracle.verdict import (MAX_HINT_CHARS, MAX_ITEM_CHARS, MAX_ITEMS, JudgeError,
                                             parse_foreign_verdict, parse_verdict)
from tests.agents.claude_code.test_hooks import load as hook_load, make_goal as hook_goal  # noqa: F401
from tests.agents.claude_code.test_hooks import project as hook_project  # noqa: F401 (a fixture)
from tests.agents.claude_code.test_hooks import run_hook, stop_input
from tests.fakeapi import FAST_RETRY, FakeAPI, Raw, delay, drip, error, redirect, text
from tests.oracle.test_oracle import VERDICT, api_env, judge, project  # noqa: F401 (fixtures)

# Far above the 3 s deadline, far below what the slow server would take to finish (a byte each 0.5 s).
GIVE_UP = 20.0
SLACK = 9.0  # a loaded machine's share of a 3 s call: setting the judge up, a thread, the last read


def timed_judge(project) -> tuple[float, BaseException | object]:  # noqa: F811
    """How long a judge call took, and what it gave; a call still going after GIVE_UP s is left behind (the
    fake's close ends it) and reported as taking that long."""
    got: dict[str, object] = {}

    def call() -> None:
        try:
            got["value"] = judge(project)
        except BaseException as exc:  # noqa: BLE001
            got["value"] = exc

    start = time.monotonic()
    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(GIVE_UP)
    return time.monotonic() - start, got.get("value")


@pytest.fixture
def three_seconds(api_env, monkeypatch):  # noqa: F811
    monkeypatch.setenv("GOAL_CONVERGENCE_ORACLE_TIMEOUT", "3")
    monkeypatch.setenv("GOAL_CONVERGENCE_ORACLE_RETRIES", "0")
    import anthropic  # noqa: F401 - its first import (a second or more) is not the call's time

    return api_env


def test_a_slow_drip_reply_ends_at_the_deadline_of_the_whole_call(three_seconds, project):  # noqa: F811
    # headers at once, then a byte every half second: no read ever waits 3 s, so only a whole-call deadline ends it
    three_seconds.enqueue(drip(text(json.dumps(VERDICT)), every=0.5))
    took, got = timed_judge(project)
    assert isinstance(got, JudgeError), got
    assert "within 3 s" in str(got) and "the whole call" in str(got)
    assert took < 3 + SLACK, f"the call took {took:.1f} s with a 3 s deadline"


def test_retries_count_within_the_deadline(three_seconds, project, monkeypatch):  # noqa: F811
    monkeypatch.setenv("GOAL_CONVERGENCE_ORACLE_RETRIES", "5")
    # each attempt waits 1.5 s for a 529 that asks to be retried: six attempts would take 9 s and more
    three_seconds.set_responder(lambda body: delay(1.5, error(529, "overloaded_error", headers=FAST_RETRY)))
    took, got = timed_judge(project)
    assert isinstance(got, JudgeError), got
    assert took < 3 + SLACK, f"the call took {took:.1f} s with a 3 s deadline"
    assert len(three_seconds.messages) <= 3


def test_a_redirect_is_a_judge_error_and_the_other_server_is_never_asked(api_env, project):  # noqa: F811
    other = FakeAPI()
    try:
        other.enqueue(text(json.dumps({**VERDICT, "converged": True})))
        api_env.enqueue(redirect(other.url, 307))
        with pytest.raises(JudgeError, match="redirect") as exc:
            judge(project)
        assert other.url in str(exc.value) and "ANTHROPIC_BASE_URL" in str(exc.value)
        assert other.messages == []
        assert len(api_env.messages) == 1  # a redirect is not retried either
    finally:
        other.close()


def test_a_reply_over_the_size_cap_is_a_judge_error_charged_the_most_it_could_cost(api_env, project):  # noqa: F811
    huge = {**VERDICT, "reasons": ["x" * 1000] * (2 * MAX_REPLY_BYTES // 1000)}
    body = {"id": "msg_big", "type": "message", "role": "assistant", "model": "claude-haiku-5-5",
            "content": [{"type": "text", "text": json.dumps(huge)}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 10, "output_tokens": 10}}
    api_env.enqueue(Raw(json.dumps(body).encode()))
    with pytest.raises(JudgeError, match="over 1 MB") as exc:
        judge(project)
    assert exc.value.cost.dollars > 0  # its usage was never read: the most a call could have cost


def _runaway(hint: int = 3_000_000, **extra) -> dict:
    return {"converged": False, "reasons": [f"reason {i} " + "r" * 5000 for i in range(50)],
            "nextHint": "h" * hint, "confidence": 0.5, **extra}


def _assert_capped(verdict) -> None:
    assert len(verdict.next_hint) <= MAX_HINT_CHARS
    assert len(verdict.reasons) <= MAX_ITEMS and all(len(r) <= MAX_ITEM_CHARS for r in verdict.reasons)
    if verdict.tasks:
        for titles in (verdict.tasks.add, verdict.tasks.complete):
            assert len(titles) <= MAX_ITEMS and all(len(t) <= MAX_ITEM_CHARS for t in titles)
    if verdict.unfixable:
        assert len(verdict.unfixable.reason) <= MAX_HINT_CHARS and len(verdict.unfixable.evidence) <= MAX_ITEMS


def test_a_runaway_verdict_is_capped_whoever_gives_it():
    notes: list[str] = []
    ours = parse_verdict(json.dumps(_runaway(tasks={"add": ["t" * 5000] * 100, "complete": ["t1"] * 100},
                                             unfixable={"reason": "u" * 10**6, "evidence": ["e" * 5000] * 100})),
                         notes)
    _assert_capped(ours)
    assert ours.reasons[0].startswith("reason 0") and any("cut" in n for n in notes)
    for foreign in ({"ok": False, "reason": "o" * 3_000_000, "impossible": True},
                    {"decision": "replan", "reason": "d" * 3_000_000}):
        _assert_capped(parse_foreign_verdict(json.dumps(foreign)))


def test_the_anthropic_judge_caps_the_verdict_it_returns(api_env, project):  # noqa: F811
    api_env.enqueue(text(json.dumps(_runaway(hint=400_000))))  # under the reply's cap, far over the fields'
    
    judgement = judge(project)
    _assert_capped(judgement.verdict)


def test_the_stop_hook_ends_within_its_own_budget(hook_project, fake_api):  # noqa: F811
    # a check that would take a minute and a judge that drips: the stop's 4 s budget bounds them both
    slow = "python3 -c \"import os, time; time.sleep(60 if os.path.exists('slow') else 0)\""
    goal_ = hook_goal(hook_project, checks=["python3 check.py", slow], oracle_provider="anthropic",
                      oracle_model="claude-haiku-5-5")
    (hook_project / "slow").touch()  # from now on (not while the goal was made) the check takes a minute
    fake_api.enqueue(drip(text(json.dumps(VERDICT)), every=0.5))
    env = {**os.environ, "ANTHROPIC_BASE_URL": fake_api.url, "ANTHROPIC_API_KEY": "x",
           "GOAL_CONVERGENCE_ORACLE_RETRIES": "0", "GOAL_CONVERGENCE_STOP_BUDGET": "4"}
    start = time.monotonic()
    answer = run_hook("stop", stop_input(hook_project), env=env)
    took = time.monotonic() - start
    # far below the minute its check alone would take, and the drip's minutes: the rest is a loaded machine's
    # share of a hook's start, its checkpoint and its records
    assert took < 45, f"the Stop hook took {took:.1f} s with a 4 s budget"
    assert hooks.feedback(answer)  # the iteration was recorded and the session carries on
    done = hook_load(goal_.goal_id)
    assert len(done.history) == 1
    assert "this stop's budget" in (done.history[0].conditions[1].error or "")
