"""The transcript meter counts each assistant message once, incrementally, subagents included."""

from __future__ import annotations

import json
import os
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goal_convergence.agents.claude_code import transcript
from goal_convergence.errors import PriceUnknown

SONNET = "claude-sonnet-5"  # $2 in, $10 out per million tokens


def line(mid: str, *, model: str = SONNET, inp: int = 1000, out: int = 100, block: str = "text",
         stamp: str = "2026-11-30T10:00:00.000Z") -> str:
    """One transcript line as Claude Code 2.1.328 writes it for one content block of a message."""
    content = [{"type": "text", "text": "ok"}] if block == "text" else [
        {"type": "tool_use", "id": f"toolu_{mid}", "name": "Edit", "input": {}}]
    return json.dumps({
        "type": "assistant", "uuid": f"u-{mid}-{block}", "sessionId": "s1", "timestamp": stamp,
        "isSidechain": False, "version": "2.1.328",
        "message": {"id": mid, "model": model, "role": "assistant", "content": content, "stop_reason": None,
                    "usage": {"input_tokens": inp, "output_tokens": out, "cache_creation_input_tokens": 0,
                              "cache_read_input_tokens": 0, "service_tier": "standard"}},
    }) + "\n"


def user_line(text: str = "result") -> str:
    return json.dumps({"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_x", "content": text}]}}) + "\n"


def cost(inp: int, out: int) -> float:
    return (inp * 2 + out * 10) / 1e6


@pytest.fixture
def session(tmp_path) -> Path:
    return tmp_path / "projects" / "-work-p" / "s1.jsonl"


def write(path: Path, *lines: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("".join(lines))


def test_a_message_repeated_per_content_block_counts_once_with_its_last_usage(session):
    write(session, line("msg_1", out=1), line("msg_1", out=40, block="tool"), user_line(),
          line("msg_2", inp=2000, out=7))
    r = transcript.read(session, {}, final=True)
    assert r.dollars == pytest.approx(cost(1000, 40) + cost(2000, 7))
    assert r.tokens == 1040 + 2007
    assert r.model == SONNET
    assert r.offsets == {str(session): session.stat().st_size}


def test_synthetic_messages_and_other_lines_cost_nothing(session):
    write(session, user_line(), line("msg_s", model="<synthetic>"), '{"type": "summary"}\n', "not json\n")
    r = transcript.read(session, {}, final=True)
    assert (r.dollars, r.tokens, r.model) == (0, 0, None)


@pytest.mark.parametrize("count", ["Infinity", "-Infinity", "NaN", "1e999", '"many"'])
def test_a_count_that_is_no_finite_number_bills_nothing_and_the_rest_is_read(session, count):
    """Python's JSON reader takes Infinity, NaN and 1e999 as floats: no token count, and no crash."""
    write(session, line("msg_1").replace('"input_tokens": 1000', f'"input_tokens": {count}'), line("msg_2"))
    r = transcript.read(session, {}, final=True)
    assert (r.dollars, r.tokens) == (pytest.approx(cost(1000, 100)), 1100)


def test_a_partial_last_line_is_left_for_the_next_read(session):
    full = line("msg_1") + line("msg_2", out=5)
    write(session, full[:-30])
    first = transcript.read(session, {}, final=True)
    assert first.dollars == pytest.approx(cost(1000, 100))
    assert first.offsets[str(session)] == len(line("msg_1"))
    write(session, full[-30:])
    second = transcript.read(session, first.offsets, final=True)
    assert second.dollars == pytest.approx(cost(1000, 5))
    assert transcript.read(session, second.offsets, final=True).dollars == 0


def test_a_message_split_across_two_reads_counts_once(session):
    write(session, line("msg_1"), line("msg_2", out=3))
    first = transcript.read(session, {})  # a Stop: msg_2 may still get lines, so it waits
    assert first.dollars == pytest.approx(cost(1000, 100))
    assert first.offsets[str(session)] == len(line("msg_1"))
    write(session, line("msg_2", out=60, block="tool"), user_line(), line("msg_3", out=1))
    second = transcript.read(session, first.offsets)
    assert second.dollars == pytest.approx(cost(1000, 60))
    last = transcript.read(session, second.offsets, final=True)  # the session ended: count the rest
    assert last.dollars == pytest.approx(cost(1000, 1))
    assert last.offsets[str(session)] == session.stat().st_size


def test_interleaved_messages_are_held_back_together(session):
    write(session, line("msg_a"), line("msg_b"), line("msg_a", out=300, block="tool"))
    first = transcript.read(session, {})
    assert first.dollars == 0 and first.offsets[str(session)] == 0
    write(session, line("msg_b", out=200, block="tool"))
    assert transcript.read(session, first.offsets, final=True).dollars == pytest.approx(cost(1000, 300) + cost(1000, 200))


def test_subagent_transcripts_count_but_the_model_is_the_main_one(session):
    write(session, line("msg_1"))
    sub = session.parent / "s1" / "subagents" / "agent-a1.jsonl"
    write(sub, line("msg_sub", model="claude-haiku-5-5", inp=10_000, out=1_000))
    r = transcript.read(session, {}, final=True)
    assert r.dollars == pytest.approx(cost(1000, 100) + (10_000 * 0.10 + 1_000 * 0.50) / 1e6)
    assert r.model == SONNET
    assert set(r.offsets) == {str(session), str(sub)}


def test_since_skips_what_a_new_file_spent_before_the_goal_but_not_later_reads(session):
    write(session, line("msg_old", stamp="2026-11-30T09:00:00Z"), line("msg_new", out=9, stamp="2026-11-30T11:00:00Z"))
    since = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    r = transcript.read(session, {}, since=since, final=True)
    assert r.dollars == pytest.approx(cost(1000, 9))
    write(session, line("msg_later", out=2, stamp="2026-11-30T09:30:00Z"))  # a known file: since no longer applies
    assert transcript.read(session, r.offsets, since=since, final=True).dollars == pytest.approx(cost(1000, 2))


def test_an_unknown_model_is_an_error_not_a_free_message(session):
    write(session, line("msg_1", model="claude-mystery-9"))
    with pytest.raises(PriceUnknown, match="claude-mystery-9"):
        transcript.read(session, {}, final=True)


def test_a_missing_transcript_reads_as_nothing(session):
    assert transcript.read(session, {}, final=True) == transcript.Reading()


def test_a_replaced_shorter_file_is_read_from_the_start(session):
    write(session, line("msg_1"))
    assert transcript.read(session, {str(session): 10_000}, final=True).dollars == pytest.approx(cost(1000, 100))


MESSAGES = st.lists(st.tuples(st.integers(1, 3), st.integers(0, 500)), min_size=1, max_size=8)


@settings(max_examples=200, deadline=None)
@given(messages=MESSAGES, cuts=st.lists(st.floats(0, 1), max_size=5))
def test_any_sequence_of_reads_counts_every_message_exactly_once(tmp_path_factory, messages, cuts):
    """However the writes are cut (mid-line, mid-message) and however often the Stop hook reads,
    the reads add up to the message costs, last line winning."""
    path = tmp_path_factory.mktemp("t") / "s.jsonl"
    text = ""
    for i, (n_lines, out) in enumerate(messages):
        for k in range(n_lines):  # earlier lines of a streamed message carry fewer output tokens
            text += line(f"msg_{i}", out=out if k == n_lines - 1 else out // 2, block="text" if k else "tool")
        text += user_line()
    data = text.encode()
    points = sorted(int(c * len(data)) for c in cuts) + [len(data)]
    offsets: dict[str, int] = {}
    total, written = 0.0, 0
    for point in points:
        with open(path, "ab") as fh:
            fh.write(data[written:point])
        written = point
        r = transcript.read(path, offsets)
        total += r.dollars
        offsets = {**offsets, **r.offsets}
    total += transcript.read(path, offsets, final=True).dollars
    assert total == pytest.approx(sum(cost(1000, out) for _, out in messages))


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "dev-urandom", "folder", "nul"])
def test_only_a_regular_file_is_read_and_a_bad_path_is_one_note(session, kind):
    session.parent.mkdir(parents=True)
    if kind == "fifo":
        os.mkfifo(session)  # no writer: opening it blocking would wait for ever
        path = str(session)
    elif kind == "folder":
        session.mkdir()
        path = str(session)
    else:
        path = {"dev-zero": "/dev/zero", "dev-urandom": "/dev/urandom", "nul": f"{session}\0x"}[kind]
    started = time.monotonic()
    r = transcript.read(path, {})
    assert time.monotonic() - started < 2
    assert (r.dollars, r.offsets) == (0, {})
    assert r.note and "\n" not in r.note and "regular file" in r.note


def test_a_read_is_bounded_and_the_next_one_carries_on(session, monkeypatch):
    monkeypatch.setattr(transcript, "MAX_READ", 3 * len(line("msg_0000")))
    write(session, *(line(f"msg_{i:04d}") for i in range(10)))
    offsets, total, reads = {}, 0.0, 0
    while offsets.get(str(session)) != session.stat().st_size:
        r = transcript.read(session, offsets, final=True)
        assert r.offsets[str(session)] > offsets.get(str(session), -1)  # always forward
        offsets, total, reads = r.offsets, total + r.dollars, reads + 1
    assert reads >= 4
    assert total == pytest.approx(10 * cost(1000, 100))


def test_a_huge_line_is_skipped_without_being_held(session):
    # 64 MB without a newline, then messages: the old reader held the line, joined block by block (quadratic).
    write(session, line("msg_1"))
    with open(session, "ab") as fh:
        fh.write(b'{"type": "user", "x": "' + b"y" * (64 << 20) + b'"}\n')
    write(session, line("msg_2"))
    tracemalloc.start()
    try:
        r = transcript.read(session, {}, final=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert r.dollars == pytest.approx(2 * cost(1000, 100))
    assert peak < 4 << 20  # the file is mapped, not copied into Python's heap: never the 64 MB line


def test_a_sparse_file_moves_forward_instead_of_being_reread_from_zero(session, monkeypatch):
    monkeypatch.setattr(transcript, "MAX_READ", 8 << 20)
    session.parent.mkdir(parents=True)
    with open(session, "wb") as fh:
        fh.truncate(40 << 20)  # 40 MB of zeros, no newline: one line far over MAX_LINE
    write(session, "\n", line("msg_1"))
    offsets, reads = {}, 0
    while offsets.get(str(session)) != session.stat().st_size:
        r = transcript.read(session, offsets, final=True)
        assert r.offsets[str(session)] > offsets.get(str(session), -1)
        offsets, reads = r.offsets, reads + 1
        if r.dollars:
            assert r.dollars == pytest.approx(cost(1000, 100))
    assert reads <= 7


def test_the_price_is_looked_up_once_a_model_not_once_a_message(session, monkeypatch):
    write(session, *(line(f"msg_{i}") for i in range(50)), line("msg_h", model="claude-haiku-5-5"))
    looked = []
    real = transcript.cost.price_for
    monkeypatch.setattr(transcript.cost, "price_for", lambda model: looked.append(model) or real(model))
    transcript.read(session, {}, final=True)
    assert sorted(looked) == ["claude-haiku-5-5", SONNET]
