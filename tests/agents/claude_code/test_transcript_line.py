"""The meter reads a message line with its content cut out: it must count what ``json.loads`` of every
line counts, whatever the content holds (a tool input with a "usage" key of its own, words about
usage, a subagent's usage in a tool result) and however the lines are cut between reads."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goal_convergence.agents.claude_code import transcript, transcript_line, transcript_scan
from goal_convergence.storage import cost

SONNET, HAIKU = "claude-sonnet-5", "claude-haiku-5-5"
BIG = "def f():\n    return \"usage\"  # é ✓\n" * 400  # 14 KB, quotes and non-ASCII, longer than a WINDOW


def usage(inp: int = 1000, out: int = 100, **more) -> dict:
    return {"input_tokens": inp, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
            "output_tokens": out, "service_tier": "standard", **more}


def claude_line(mid: str, *, model: str = SONNET, inp: int = 1000, out: int = 100, block: dict | None = None,
                stamp: str = "2026-11-30T10:00:00.000Z") -> str:
    """An assistant line as Claude Code 2.x writes it: compact, UTF-8, the message's usage last, the
    entry's type after the message."""
    return json.dumps({
        "parentUuid": "a1", "isSidechain": False, "userType": "external", "cwd": "/home/dev/p", "sessionId": "s1",
        "version": "2.1.328", "gitBranch": "main",
        "message": {"model": model, "id": mid, "type": "message", "role": "assistant",
                    "content": [block or {"type": "text", "text": "ok"}], "stop_reason": None, "stop_sequence": None,
                    "usage": usage(inp, out)},
        "requestId": "req_011C", "type": "assistant", "uuid": "b2", "timestamp": stamp,
    }, ensure_ascii=False, separators=(",", ":")) + "\n"


def claude_user(content: object, **extra) -> str:
    """A user line as Claude Code writes it: its type before its message, a tool's result after."""
    return json.dumps({"parentUuid": "b2", "isSidechain": False, "userType": "external", "cwd": "/home/dev/p",
                       "sessionId": "s1", "version": "2.1.328", "gitBranch": "main", "type": "user",
                       "message": {"role": "user", "content": content}, "uuid": "c3",
                       "timestamp": "2026-11-30T10:00:01.000Z", **extra}, ensure_ascii=False, separators=(",", ":")) + "\n"


def tool_result(text: str, **extra) -> str:
    return claude_user([{"tool_use_id": "toolu_1", "type": "tool_result", "content": text}], **extra)


def expected(text: str) -> tuple[float, int]:
    """What ``json.loads`` of every line says was spent: each message once, with its last line's usage."""
    last: dict[str, tuple[str, dict]] = {}
    for raw in text.splitlines():
        try:
            entry = json.loads(raw)
            message = entry["message"]
            if entry["type"] == "assistant" and isinstance(message["usage"], dict):
                last[message["id"]] = (message["model"], message["usage"])
        except (ValueError, KeyError, TypeError):
            continue
    return (sum(cost.usage_cost(model, u) for model, u in last.values()),
            sum(cost.usage_tokens(u) for _, u in last.values()))


def read_all(path: Path) -> transcript.Reading:
    return transcript.read(path, {}, final=True)


def check(path: Path, *lines: str) -> transcript.Reading:
    path.write_text("".join(lines), encoding="utf-8")
    r = read_all(path)
    dollars, tokens = expected("".join(lines))
    assert (r.dollars, r.tokens) == (pytest.approx(dollars, rel=1e-12), tokens)
    return r


def test_a_tool_input_holding_a_usage_key_does_not_stand_for_the_messages_usage(tmp_path):
    trap = {"type": "tool_use", "id": "toolu_1", "name": "Edit",
            "input": {"usage": {"input_tokens": 10**9, "output_tokens": 10**9}, "text": BIG}}
    r = check(tmp_path / "s.jsonl", claude_line("msg_1", block=trap, out=7), tool_result("done"))
    assert r.tokens == 1007
    # A message without usage of its own, whose tool input has one: not a bill at all.
    lone = json.loads(claude_line("msg_2", block=trap))
    del lone["message"]["usage"]
    assert check(tmp_path / "t.jsonl", claude_line("msg_1"), json.dumps(lone, separators=(",", ":")) + "\n").tokens == 1100


def test_words_about_usage_and_a_subagents_usage_in_a_tool_result_cost_nothing(tmp_path):
    said = 'the "usage" of the "assistant" reply was {"input_tokens": 99999}'
    r = check(tmp_path / "s.jsonl",
              claude_user(said),
              claude_line("msg_1", block={"type": "text", "text": said}),
              tool_result(said, toolUseResult={"status": "completed", "content": [{"type": "text", "text": said}],
                                               "usage": {"input_tokens": 777, "output_tokens": 777}}),
              claude_line("msg_2", out=3))
    assert r.tokens == 1100 + 1003


def test_a_message_id_repeated_across_lines_counts_once_with_its_last_usage(tmp_path):
    thinking = {"type": "thinking", "thinking": BIG, "signature": "EqQBCkgIBxAB"}
    tool = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": BIG}}
    r = check(tmp_path / "s.jsonl", claude_line("msg_1", block=thinking, out=1), claude_line("msg_1", out=2),
              claude_line("msg_1", block=tool, out=40), tool_result(BIG), claude_line("msg_2", out=5),
              claude_user("again"), claude_line("msg_2", out=9))
    assert r.tokens == 1040 + 1009
    assert r.model == SONNET


def test_a_partial_last_line_is_read_once_it_is_whole(tmp_path):
    path = tmp_path / "s.jsonl"
    whole = claude_line("msg_1") + tool_result(BIG) + claude_line("msg_2", out=5)
    cut = len(whole) - 40  # inside msg_2's usage
    path.write_text(whole[:cut], encoding="utf-8")
    first = read_all(path)
    assert first.tokens == 1100
    assert first.offsets[str(path)] == len((claude_line("msg_1") + tool_result(BIG)).encode())
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(whole[cut:])
    second = transcript.read(path, first.offsets, final=True)
    assert second.tokens == 1005 and second.offsets[str(path)] == path.stat().st_size


def test_each_message_is_priced_at_its_own_context_length(tmp_path):
    # Summed per price, not per model: a Haiku call above 100k prompt tokens costs the long-context price.
    r = check(tmp_path / "s.jsonl", claude_line("msg_1", model=HAIKU, inp=60_000),
              claude_line("msg_2", model=HAIKU, inp=140_000), claude_line("msg_3", inp=5))
    assert r.dollars == pytest.approx(cost.usage_cost(HAIKU, usage(60_000)) + cost.usage_cost(HAIKU, usage(140_000))
                                      + cost.usage_cost(SONNET, usage(5)))


def test_only_the_usage_is_parsed_not_the_content(tmp_path, monkeypatch):
    """The meter's time follows the messages, not the bytes: a transcript of long tool inputs and
    results is never handed to the JSON parser whole."""
    tool = {"type": "tool_use", "id": "toolu_1", "name": "Write", "input": {"content": BIG}}
    path = tmp_path / "s.jsonl"
    path.write_text("".join(claude_line(f"msg_{i}", block=tool) + tool_result(BIG) for i in range(100)), encoding="utf-8")
    parsed = []
    real = json.loads
    monkeypatch.setattr(json, "loads", lambda s, *a, **k: parsed.append(len(s)) or real(s, *a, **k))
    assert read_all(path).tokens == 100 * 1100
    assert sum(parsed) < path.stat().st_size / 20


ODD = {  # shapes the cut must read as json.loads does, or leave to it
    "Claude Code's": lambda e: e,
    "type first": lambda e: {"type": e.pop("type"), **e},
    "id after the usage": lambda e: {**e, "message": {**{k: v for k, v in e["message"].items() if k != "id"},
                                                      "id": e["message"]["id"]}},
    "a pair after the usage": lambda e: {**e, "message": {**e["message"], "context_management": None}},
    "another usage after the usage": lambda e: {**e, "message": {**e["message"], "x": {"usage": {"input_tokens": 5}}}},
    "a usage beside the message": lambda e: {**e, "x": {"usage": {"input_tokens": 5}}},
    "type first, a usage beside the message": lambda e: {"type": e.pop("type"), **e, "x": {"usage": {"input_tokens": 5}}},
    "usage before the content": lambda e: {**e, "message": {"usage": e["message"]["usage"],
                                                            **{k: v for k, v in e["message"].items() if k != "usage"}}},
    "no content": lambda e: {**e, "message": {k: v for k, v in e["message"].items() if k != "content"}},
    "escaped model": lambda e: e,
    "synthetic": lambda e: {**e, "message": {**e["message"], "model": "<synthetic>"}},
    "usage not an object": lambda e: {**e, "message": {**e["message"], "usage": [1, 2]}},
    "a user entry with an assistant's message": lambda e: {**e, "type": "user"},
    "long metadata": lambda e: {"cwd": BIG, **e},
    "long tail": lambda e: {**e, "note": BIG},
    "message not an object": lambda e: {**e, "message": "usage"},
}


@pytest.mark.parametrize("spacing", [(",", ":"), (", ", ": ")])
@pytest.mark.parametrize("shape", ODD)
def test_the_cut_reads_a_line_as_json_loads_does(shape, spacing):
    entry = ODD[shape](json.loads(claude_line("msg_1", block={"type": "tool_use", "id": "toolu_1", "name": "Edit",
                                                                "input": {"old": BIG, "new": BIG}})))
    text = json.dumps(entry, separators=spacing, ensure_ascii=False)
    if shape == "escaped model":
        text = text.replace(SONNET, SONNET.replace("s", "\\u0073"))
    data = b"\n" + text.encode() + b"\n"
    whole = json.loads(text)
    message = whole.get("message")
    want = None
    if whole.get("type") == "assistant" and isinstance(message, dict) and {"id", "model", "usage"} <= message.keys():
        want = (message["id"], message["model"], message["usage"], whole.get("timestamp"))
    assert transcript_line.message(data, 1, len(data) - 1) == want


# One entry: (start a new message?, what kind of line, a number for it). Messages come one after another,
# as Claude Code writes them; a message's lines may be parted by tool results.
LINES = st.tuples(st.booleans(), st.sampled_from(["text", "tool input with usage", "task result", "words"]),
                  st.integers(0, 6000))


def transcript_text(entries: list[tuple[bool, str, int]]) -> str:
    mid, text = 0, ""
    for new, kind, n in entries:
        mid += new
        if kind == "text":
            text += claude_line(f"msg_{mid}", out=n)
        elif kind == "tool input with usage":
            text += claude_line(f"msg_{mid}", out=n, block={"type": "tool_use", "id": "t", "name": "E",
                                                         "input": {"usage": {"input_tokens": n}, "text": BIG[:n]}})
        elif kind == "task result":
            text += tool_result(BIG[:n], toolUseResult={"usage": {"input_tokens": n}})
        else:
            text += claude_user('"usage" "assistant" ' * (n // 20))
    return text


@settings(max_examples=150, deadline=None)
@given(entries=st.lists(LINES, min_size=1, max_size=12), cuts=st.lists(st.floats(0, 1), max_size=4))
def test_reads_cut_anywhere_add_up_to_what_json_loads_counts_and_offsets_only_move_forward(tmp_path_factory, entries,
                                                                                         cuts):
    path = tmp_path_factory.mktemp("t") / "s.jsonl"
    data = transcript_text(entries).encode()
    offsets: dict[str, int] = {}
    tokens, written = 0, 0
    for point in [*sorted(int(c * len(data)) for c in cuts), len(data)]:
        with open(path, "ab") as fh:
            fh.write(data[written:point])
        written = point
        r = transcript.read(path, offsets)
        assert r.offsets[str(path)] >= offsets.get(str(path), 0)
        tokens += r.tokens
        offsets = {**offsets, **r.offsets}
    tokens += transcript.read(path, offsets, final=True).tokens
    assert tokens == expected(data.decode())[1]


# Claude Code's own layout is read by comparing bytes (transcript.py's fast path): the same traps, read there.

def usage_tail(**more) -> dict:
    return {"stop_reason": None, "stop_sequence": None, "usage": usage(10**9, 10**9), **more}


def test_claude_codes_own_lines_are_read_without_the_json_parser(tmp_path, monkeypatch):
    path = tmp_path / "s.jsonl"
    path.write_text("".join(claude_line(f"msg_{i}", out=i) + claude_line(f"msg_{i}", out=i + 1) + tool_result(BIG)
                            for i in range(50)), encoding="utf-8")
    parsed, real = [], json.loads
    monkeypatch.setattr(json, "loads", lambda s, *a, **k: parsed.append(s) or real(s, *a, **k))
    assert read_all(path).tokens == sum(1000 + i + 1 for i in range(50))
    assert not [s for s in parsed if "msg_" in str(s)]  # the price table may be; no line is


def test_the_tail_of_a_message_inside_its_content_is_not_taken_for_its_own(tmp_path):
    # A tool input and a text holding what the line's tail looks like: structured (its brackets real)
    # and as words (its quotes escaped); a user's text holding an assistant's head.
    trap = {"type": "tool_use", "id": "toolu_1", "name": "Edit", "input": {"a": [1], **usage_tail()}}
    fake = json.dumps(usage_tail(), separators=(",", ":")) + '"type":"assistant"'
    head = '{"parentUuid":"a1","message":{"model":"claude-sonnet-5","id":"msg_9","type":"message","role":"assistant"'
    r = check(tmp_path / "s.jsonl", claude_user(head), claude_line("msg_1", block=trap, out=7),
              claude_line("msg_2", block={"type": "text", "text": fake}, out=8), tool_result(head + fake))
    assert r.tokens == 1007 + 1008


def test_a_user_entry_with_an_assistants_message_neither_counts_nor_ends_a_run(tmp_path):
    user = json.loads(claude_line("msg_1", out=50))
    user = {**{k: v for k, v in user.items() if k not in ("message", "type")}, "type": "user", "message": user["message"]}
    r = check(tmp_path / "s.jsonl", claude_line("msg_1", out=7), json.dumps(user, separators=(",", ":")) + "\n")
    assert r.tokens == 1007


def test_repeated_ids_apart_from_each_other_count_once_with_the_last_usage(tmp_path):
    r = check(tmp_path / "s.jsonl", claude_line("msg_1", out=1), claude_line("msg_2", out=2), tool_result("x"),
              claude_line("msg_1", out=3), claude_line("msg_2", out=4), claude_line("msg_1", out=5))
    assert r.tokens == 1005 + 1004


def test_crlf_and_odd_whitespace_read_as_json_loads_reads_them(tmp_path):
    one, two = claude_line("msg_1", out=1), claude_line("msg_2", out=2)
    spaced = json.dumps(json.loads(claude_line("msg_3", out=3)), ensure_ascii=False) + "\n"  # ", " and ": "
    check(tmp_path / "s.jsonl", one.replace("\n", "\r\n"), two.replace("\n", " \t\r\n"), spaced, "\r\n", "  \n",
          claude_line("msg_4", out=4).replace("\n", "\r\n"))


def test_session_fields_that_change_midway_and_odd_parents_are_read_alike(tmp_path):
    lines = [claude_line(f"msg_{i}", out=i) for i in range(6)]
    lines[0] = lines[0].replace('"parentUuid":"a1"', '"parentUuid":null')
    lines[2] = lines[2].replace('"gitBranch":"main"', '"gitBranch":"fix/the-meter"')
    lines[3] = lines[3].replace('"parentUuid":"a1"', '"parentUuid":"a\\"1"')  # an escaped quote in it
    lines[4] = lines[4].replace('"cwd":"/home/dev/p"', '"cwd":{"x":"/home/dev/p"}')  # not a flat field
    # Escapes in a model and an id, after a line of the usual fields: the same model and the same message as
    # json.loads decodes them.
    escaped = claude_line("msg_7", out=7).replace('"claude-sonnet-5"', '"claude-sonnet-\\u0035"')
    lines += [claude_line("msg_6", out=6), escaped.replace('"msg_7"', '"msg_\\u0037"'), claude_line("msg_7", out=70)]
    assert check(tmp_path / "s.jsonl", *lines).tokens == sum(1000 + i for i in range(7)) + 1070


def test_since_reads_the_timestamp_of_claude_codes_layout(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(claude_line("msg_1", out=1, stamp="2026-11-30T09:00:00.000Z")
                    + claude_line("msg_2", out=2, stamp="2026-11-30T11:00:00.000Z"), encoding="utf-8")
    since = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    assert transcript.read(path, {}, since=since, final=True).tokens == 1002


def test_lines_across_the_windows_of_the_map_and_one_longer_than_a_window(tmp_path, monkeypatch):
    monkeypatch.setattr(transcript_scan, "WINDOW", 64 << 10)
    monkeypatch.setattr(transcript_scan, "MAX_LINE", 32 << 10)
    text = "".join(claude_line(f"msg_{i}", out=i, block={"type": "text", "text": BIG[:i * 97]}) + tool_result(BIG[:i])
                   for i in range(120))
    long = tool_result("y" * (200 << 10))  # longer than a window: skipped, as any line over MAX_LINE
    check(tmp_path / "s.jsonl", text, long, claude_line("msg_x", out=9), text.replace("msg_", "msg_b"))


def test_a_256_mb_line_is_passed_over_and_the_messages_around_it_count(tmp_path):
    path = tmp_path / "s.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(claude_line("msg_1", out=1) + tool_result("x")[:-3])  # the result's text, still open
        for _ in range(256):
            fh.write("z" * (1 << 20))
        fh.write(tool_result("x")[-3:] + claude_line("msg_2", out=2))
    r = read_all(path)
    assert r.tokens == 1001 + 1002 and r.offsets[str(path)] == path.stat().st_size


def test_a_file_system_that_cannot_map_the_file_is_read_instead(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError(19, "No such device")  # ENODEV: what mmap says on a file system without it
    monkeypatch.setattr(transcript_scan.mmap, "mmap", refuse)
    check(tmp_path / "s.jsonl", claude_line("msg_1", out=1), tool_result(BIG), claude_line("msg_2", out=2))
