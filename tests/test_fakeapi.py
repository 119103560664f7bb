"""The scripted Messages API answers the real SDK and the real Claude Code the way the real API does."""

from __future__ import annotations

import json
import subprocess
import time

import anthropic
import pytest

from tests.fakeapi import FAST_RETRY, delay, error, text, tool_use

HI = [{"role": "user", "content": "hi"}]


@pytest.fixture
def client(fake_api):
    return anthropic.Anthropic(base_url=fake_api.url, api_key="x", max_retries=0, timeout=5)


def test_text_reply(fake_api, client):
    fake_api.enqueue(text("hello", usage={"input_tokens": 7, "output_tokens": 3}))
    message = client.messages.create(model="claude-haiku-5-5", max_tokens=10, messages=HI)
    assert message.content[0].text == "hello"
    assert message.model == "claude-haiku-5-5"
    assert message.stop_reason == "end_turn"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (7, 3)
    [request] = fake_api.history
    assert request.path == "/v1/messages" and request.body["messages"] == HI
    assert request.headers["authorization"] == "Bearer x"  # anthropic 2.x sends the key as a bearer token


def test_streamed_text_reply(fake_api, client):
    fake_api.enqueue(text("hello there", model="claude-sonnet-5"))
    with client.messages.stream(model="claude-haiku-5-5", max_tokens=10, messages=HI) as stream:
        assert "".join(stream.text_stream) == "hello there"
        message = stream.get_final_message()
    assert message.model == "claude-sonnet-5"
    assert fake_api.history[0].body["stream"] is True


@pytest.mark.parametrize("stream", [False, True])
def test_text_and_tool_use_in_one_message(fake_api, client, stream):
    fake_api.enqueue(text("let me look") + tool_use("read_file", {"path": "a.py", "start": 1}, id="toolu_1"))
    kwargs = dict(model="claude-haiku-5-5", max_tokens=10, messages=HI)
    if stream:
        with client.messages.stream(**kwargs) as s:
            message = s.get_final_message()
    else:
        message = client.messages.create(**kwargs)
    assert [b.type for b in message.content] == ["text", "tool_use"]
    call = message.content[1]
    assert (call.id, call.name, call.input) == ("toolu_1", "read_file", {"path": "a.py", "start": 1})
    assert message.stop_reason == "tool_use"


def test_errors_are_retried_by_the_sdk(fake_api):
    fake_api.enqueue(error(429, "rate_limit_error", headers=FAST_RETRY),
                     error(529, "overloaded_error", headers=FAST_RETRY), text("ok"))
    client = anthropic.Anthropic(base_url=fake_api.url, api_key="x", max_retries=2)
    message = client.with_options(timeout=5).messages.create(model="m", max_tokens=5, messages=HI)
    assert message.content[0].text == "ok"
    assert len(fake_api.messages) == 3


def test_error_reaches_the_caller(fake_api, client):
    fake_api.enqueue(error(500, "api_error", "boom"))
    with pytest.raises(anthropic.InternalServerError, match="boom"):
        client.messages.create(model="m", max_tokens=5, messages=HI)


def test_delay_outlasts_a_timeout(fake_api):
    fake_api.enqueue(delay(5, text("too late")))
    client = anthropic.Anthropic(base_url=fake_api.url, api_key="x", max_retries=0, timeout=0.3)
    started = time.monotonic()
    with pytest.raises(anthropic.APITimeoutError):
        client.messages.create(model="m", max_tokens=5, messages=HI)
    assert time.monotonic() - started < 3


def test_responder_answers_when_the_queue_is_empty(fake_api, client):
    fake_api.enqueue(text("queued"))
    fake_api.set_responder(lambda body: text(f"echo {body['model']}"))
    replies = [client.messages.create(model=m, max_tokens=5, messages=HI).content[0].text for m in ("a", "b")]
    assert replies == ["queued", "echo b"]


def test_unscripted_request_is_a_clear_client_error(fake_api, client):
    with pytest.raises(anthropic.BadRequestError, match="nothing enqueued"):
        client.messages.create(model="m", max_tokens=5, messages=HI)


def test_count_tokens_is_a_chars_over_4_estimate(fake_api, client):
    big = [{"role": "user", "content": "x" * 4000}]
    assert 1000 <= client.messages.count_tokens(model="m", messages=big).input_tokens <= 1020


@pytest.mark.e2e
def test_real_claude_code_gets_the_scripted_text(fake_api, claude_bin, tmp_path):
    fake_api.set_responder(lambda body: text("scripted hello", usage={"input_tokens": 1000, "output_tokens": 100}))
    result = subprocess.run([claude_bin, "-p", "hi", "--output-format", "json", "--model", "claude-sonnet-5",
                             "--no-session-persistence"], cwd=tmp_path, env=fake_api.claude_env(tmp_path),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["result"] == "scripted hello"
    assert out["total_cost_usd"] == pytest.approx((1000 * 2 + 100 * 10) / 1e6)  # Sonnet 5: $2 in, $10 out
    assert fake_api.messages[0].path == "/v1/messages?beta=true"
    assert fake_api.messages[0].body["stream"] is True


def test_malformed_replies_are_200s_with_exactly_those_bytes(fake_api):
    import urllib.request

    from tests.fakeapi import MALFORMED, malformed

    for kind, payload in MALFORMED.items():
        fake_api.enqueue(malformed(kind))
        request = urllib.request.Request(f"{fake_api.url}/v1/messages", data=b"{}", method="POST")
        with urllib.request.urlopen(request, timeout=5) as answer:
            assert (answer.status, answer.read()) == (200, payload), kind
