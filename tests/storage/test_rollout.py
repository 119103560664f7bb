"""The Codex rollout meter: each response's usage line counted once across reads from stored offsets, at
the model's price; a line still being written waits for the next read; a model with no price is counted
in tokens with a note, never as a silent $0. Lines in the shape codex 0.171.0 writes them."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from goal_convergence.models import codex_exec
from goal_convergence.storage import cost, rollout

MTOK = 1_000_000


def context(model: str, at: str = "2026-12-05T19:33:51.496Z") -> str:
    return json.dumps({"timestamp": at, "type": "turn_context", "payload": {"turn_id": "t1", "model": model}})


def usage(inp: int, out: int, cached: int = 0, at: str = "2026-12-05T19:33:51.611Z") -> str:
    record = {"input_tokens": inp, "cached_input_tokens": cached, "cache_write_input_tokens": 0,
              "output_tokens": out, "reasoning_output_tokens": 0, "total_tokens": inp + out}
    return json.dumps({"timestamp": at, "type": "token_usage_record",
                       "payload": {"response_id": "resp_1", "usage": record, "turn_token_usage": record}})


def message(text: str) -> str:
    return json.dumps({"timestamp": "2026-12-05T19:33:51.610Z", "type": "response_item",
                       "payload": {"type": "message", "role": "assistant",
                                   "content": [{"type": "output_text", "text": text}]}})


@pytest.fixture
def path(tmp_path) -> Path:
    return tmp_path / "rollout-2026-12-05T19-33-51-01a247b2.jsonl"


def test_reads_from_stored_offsets_charge_each_response_once_at_its_price(path):
    path.write_text("\n".join([context("gpt-5.1-codex"), usage(1000, 100, cached=400), message("hi")]) + "\n")
    first = rollout.read(path, {})
    price = cost.price_for("gpt-5.1-codex")
    assert first.tokens == 1100 and first.model == "gpt-5.1-codex"
    assert first.dollars == pytest.approx((600 * price.input + 400 * price.cache_read + 100 * price.output) / MTOK)
    with path.open("a") as fh:
        fh.write(usage(2000, 50) + "\n" + usage(10, 10)[:30])  # the last line is still being written
    second = rollout.read(path, first.offsets, model="gpt-5.1-codex")  # the hook input's model: no context line here
    assert second.tokens == 2050
    assert second.dollars == pytest.approx((2000 * price.input + 50 * price.output) / MTOK)
    with path.open("a") as fh:
        fh.write(usage(10, 10)[30:] + "\n")
    third = rollout.read(path, second.offsets)
    assert third.tokens == 20 and rollout.read(path, third.offsets).tokens == 0


def test_a_read_that_starts_past_the_turns_context_prices_with_the_sessions_model(path):
    path.write_text(usage(1000, 0) + "\n")
    assert rollout.read(path, {}, model="gpt-5-mini").dollars == pytest.approx(1000 * 0.25 / MTOK)


def test_a_model_with_no_price_is_counted_in_tokens_and_named_never_a_silent_zero(path):
    path.write_text("\n".join([context("gpt-9-nano"), usage(300, 30)]) + "\n")
    reading = rollout.read(path, {})
    assert (reading.tokens, reading.dollars) == (330, 0.0)
    assert "no price for the Codex model 'gpt-9-nano' (330 tokens)" in reading.note
    assert "token budget" in reading.note and "prices.json" in reading.note


def test_what_a_newly_seen_file_spent_before_the_goal_began_is_not_charged(path):
    path.write_text("\n".join([context("gpt-5.1-codex"), usage(500, 5, at="2026-12-05T10:00:00.000Z"),
                               usage(700, 7, at="2026-12-05T12:00:00.000Z")]) + "\n")
    since = datetime(2026, 12, 5, 11, tzinfo=UTC)
    assert rollout.read(path, {}, since=since).tokens == 707
    assert rollout.read(path, {str(path): 0}, since=since).tokens == 1212  # a file read before: all of it


def test_a_path_that_is_no_regular_file_is_named_and_not_read(tmp_path):
    reading = rollout.read(tmp_path, {})
    assert reading.tokens == 0 and "did not read the Codex rollout" in reading.note
    assert rollout.read(tmp_path / "missing.jsonl", {}).note is None


def test_codex_exec_json_gives_the_thread_the_last_message_and_the_turns_usage():
    out = "\n".join([
        '{"type":"thread.started","thread_id":"01a247b2"}',
        "WARNING: not JSON",
        '{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"first"}}',
        '{"type":"item.completed","item":{"id":"item_4","type":"agent_message","text":"hello from fake"}}',
        '{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":5}}',
    ])
    result = codex_exec.parse(out)
    assert (result.thread_id, result.message, result.tokens, result.completed) == ("01a247b2", "hello from fake", 105,
                                                                                   True)
    assert rollout.usage_counts(result.usage()) == (60, 0, 0, 40, 5)
    failed = codex_exec.parse('{"type":"turn.failed","error":{"message":"stream disconnected"}}')
    assert (failed.error, failed.completed) == ("stream disconnected", False)


def test_a_response_past_the_long_context_threshold_is_priced_at_the_long_context_price(path):
    path.write_text("\n".join([context("gpt-5.5"), usage(300_000, 1000), usage(1000, 1000)]) + "\n")
    assert rollout.read(path, {}).dollars == pytest.approx((300_000 * 10 + 1000 * 45 + 1000 * 5 + 1000 * 30) / MTOK)
