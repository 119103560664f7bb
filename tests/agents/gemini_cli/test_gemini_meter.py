"""The Gemini meter on chat recordings shaped as Gemini CLI 0.61 writes them, and spend no price counts:
charged in tokens, the goal held to a token budget, told in one line (never a silent $0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from goal_convergence.agents.gemini_cli import transcript
from goal_convergence.models import Budget
from goal_convergence.models.gemini_result import GeminiResult
from goal_convergence.rules import budget
from goal_convergence.storage import cost

FLASH = (1000 * 0.30 + 100 * 2.50) / 1e6  # one gemini-2.5-flash call of 1000 prompt and 100 output tokens


def message(mid: str, model: str = "gemini-2.5-flash", tokens: dict | None = None, **more) -> dict:
    return {"id": mid, "timestamp": "2026-12-05T10:00:00.000Z", "type": "gemini", "content": "", "model": model,
            "tokens": tokens if tokens is not None else {"input": 1000, "output": 100, "cached": 0, "thoughts": 0,
                                                           "tool": 0, "total": 1100}, **more}


def record(path: Path, *entries: dict) -> None:
    with path.open("a") as fh:
        for entry in entries:
            fh.write(json.dumps(entry) + "\n")


@pytest.fixture
def chat(tmp_path) -> Path:
    path = tmp_path / "session-2026-12-05T10-00-abcd1234.jsonl"
    record(path, {"sessionId": "abcd1234-full", "projectHash": "x", "startTime": "2026-12-05T10:00:00.000Z"},
           {"id": "u1", "type": "user", "content": [{"text": "hi"}]})
    return path


def test_a_message_written_again_counts_once_and_the_newest_waits_for_the_next_read(chat):
    record(chat, message("m1", toolCalls=[]), {"$set": {"lastUpdated": "x"}}, message("m1", toolCalls=[{"id": 1}]),
           message("m2"))
    first = transcript.read(chat, {})
    assert (first.tokens, first.dollars) == (1100, pytest.approx(FLASH))  # m1 once; m2 held back
    record(chat, message("m2", toolCalls=[{"id": 2}]), message("m3"))
    second = transcript.read(chat, first.offsets, final=True)
    assert (second.tokens, second.dollars) == (2200, pytest.approx(2 * FLASH))  # m2 once, m3: the session ended
    assert transcript.read(chat, second.offsets, final=True).tokens == 0


def test_cached_and_thinking_tokens_are_priced_as_the_api_bills_them(chat):
    record(chat, message("m1", model="gemini-2.5-pro",
                         tokens={"input": 10000, "cached": 8000, "output": 100, "thoughts": 400, "tool": 0}))
    got = transcript.read(chat, {}, final=True)
    assert got.dollars == pytest.approx((2000 * 1.25 + 8000 * 0.125 + 500 * 10) / 1e6)
    assert got.tokens == 10500


def test_the_goals_earlier_recordings_are_read_to_their_end_once(chat, tmp_path):
    record(chat, message("m1"), message("m2"))
    held = transcript.read(chat, {})
    assert held.tokens == 1100  # the dead session's last message was held back, and no SessionEnd came
    later = tmp_path / "session-2026-12-05T11-00-ffff0000.jsonl"
    record(later, {"sessionId": "ffff0000-full"}, message("n1"), message("n2"))
    took_over = transcript.read(later, held.offsets)
    assert took_over.tokens == 2200  # n1, and the earlier session's m2, at last
    assert transcript.read(later, took_over.offsets, final=True).tokens == 1100  # n2 only


def test_subagents_recordings_are_read_beside_the_sessions(chat):
    sub = chat.parent / "abcd1234-full"
    sub.mkdir()
    record(sub / "sub-1.jsonl", {"sessionId": "sub-1", "kind": "subagent"}, message("s1"))
    record(chat, message("m1"))
    assert transcript.read(chat, {}, final=True).tokens == 2200


def test_a_model_with_no_price_is_counted_in_tokens_and_named(chat):
    record(chat, message("m1", model="gemini-9-ultra"), message("m2"))
    got = transcript.read(chat, {}, final=True)
    assert (got.tokens, got.dollars, got.unpriced) == (2200, pytest.approx(FLASH), {"gemini-9-ultra": 1100})
    note = cost.unpriced_note(got.unpriced)
    assert "no price for gemini-9-ultra (1100 tokens)" in note and "prices.json" in note and "token budget" in note


def test_spend_no_price_counts_holds_a_dollar_budget_to_tokens_it_would_buy_at_the_dearest_price(make_goal):
    goal = make_goal(budget=Budget(max_iterations=10, max_dollars=1.5))
    goal.spent.maker_dollars, goal.spent.maker_tokens = 0.5, 3000
    budget.hold_to_tokens(goal, dearest_output=75.0)
    assert goal.budget.max_tokens == 3000 + int(1.0 / 75.0 * 1e6)
    goal.spent.maker_tokens = goal.budget.max_tokens
    assert budget.exhausted(goal) == "budget-exhausted"
    kept = make_goal(budget=Budget(max_dollars=1.5, max_tokens=50))
    budget.hold_to_tokens(kept, dearest_output=75.0)
    assert kept.budget.max_tokens == 50  # a token budget the user gave stands


def test_the_headless_result_names_its_session_and_each_models_tokens():
    out = {"session_id": "s-1", "response": "Fixed it.", "stats": {"models": {
        "gemini-2.5-flash-lite": {"tokens": {"prompt": 50, "candidates": 5, "total": 55}},
        "gemini-2.5-flash": {"tokens": {"input": 900, "prompt": 1000, "candidates": 100, "cached": 100,
                                        "thoughts": 7, "tool": 0, "total": 1207}}}}}
    result = GeminiResult.model_validate_json(json.dumps(out))
    assert (result.session_id, result.response, result.main_model) == ("s-1", "Fixed it.", "gemini-2.5-flash")
    flash = result.stats.models["gemini-2.5-flash"].tokens
    assert cost.gemini_counts(flash.prompt, flash.cached, flash.candidates, flash.thoughts) == (900, 0, 0, 100, 107)
