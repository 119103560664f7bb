"""The meter's inner loop (transcript_scan.py) reads Claude Code's own lines in batches and checks a
run's usage only when the run ends: whatever the batch, the run or the ``since``, it must count what
``json.loads`` of every line counts."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from goal_convergence.agents.claude_code import transcript, transcript_scan
from tests.agents.claude_code.test_transcript_line import BIG, check, claude_line, claude_user, read_all, tool_result


def without_usage(line: str) -> str:
    """A line of Claude Code's layout whose message has no usage (its head and tail otherwise the same)."""
    entry = json.loads(line)
    del entry["message"]["usage"]
    return json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n"


def test_a_run_whose_newest_lines_hold_no_usage_counts_with_the_newest_that_does(tmp_path, monkeypatch):
    # The usage is looked for only once the run ends; then the run's lines are read again, here across
    # map windows: the run's first line in one, its newest in the next.
    monkeypatch.setattr(transcript_scan, "WINDOW", 64 << 10)
    text = BIG[:3000]
    run = [claude_line("msg_1", out=5, block={"type": "text", "text": text}), tool_result(BIG),
           *(without_usage(claude_line("msg_1", out=99, block={"type": "text", "text": text})) for _ in range(30))]
    r = check(tmp_path / "s.jsonl", *run, claude_line("msg_2", out=7))
    assert r.tokens == 1005 + 1007
    # A run none of whose lines holds a usage bills nothing, and neither does one cut short by it.
    r = check(tmp_path / "t.jsonl", without_usage(claude_line("msg_1")), claude_line("msg_2", out=3),
              without_usage(claude_line("msg_3")), claude_line("msg_2", out=4))
    assert r.tokens == 1004


def test_messages_in_many_batches_with_ids_repeated_across_them_count_once(tmp_path):
    n, again = 3 * transcript_scan.BATCH, 2 * transcript_scan.BATCH
    lines = [claude_line(f"msg_{i}", out=i) + tool_result("x") for i in range(n)]
    lines[again] = claude_line("msg_7", out=70)  # msg_7 again, two batches later
    r = check(tmp_path / "s.jsonl", *lines)
    assert r.tokens == sum(1000 + i for i in range(n) if i not in (7, again)) + 1070


def test_since_reads_batches_before_it_across_it_and_after_it_to_the_millisecond(tmp_path):
    start = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    n = 3 * transcript_scan.BATCH
    stamps = [(start + timedelta(milliseconds=i)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z" for i in range(n)]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(claude_line(f"msg_{i}", out=i, stamp=stamps[i]) for i in range(n)), encoding="utf-8")
    # Half a millisecond after the timestamp of the first message of the second batch: that one is before it.
    k = transcript_scan.BATCH
    since = start + timedelta(milliseconds=k, microseconds=500)
    assert transcript.read(path, {}, since=since, final=True).tokens == sum(1000 + i for i in range(k + 1, n))
    exact = start + timedelta(milliseconds=k)
    assert transcript.read(path, {}, since=exact, final=True).tokens == sum(1000 + i for i in range(k, n))
    # Timestamps not as Claude Code writes them are compared as datetimes, one by one.
    path.write_text("".join(claude_line(f"msg_{i}", out=i, stamp=stamps[i].replace("Z", "+00:00")) for i in range(n)),
                    encoding="utf-8")
    assert transcript.read(path, {}, since=since, final=True).tokens == sum(1000 + i for i in range(k + 1, n))
    # A since without a time zone cannot be compared with them: every message counts, as before.
    naive = since.replace(tzinfo=None)
    assert transcript.read(path, {}, since=naive, final=True).tokens == sum(1000 + i for i in range(n))


def test_synthetic_messages_of_claude_codes_layout_and_counts_that_are_not_numbers_bill_nothing(tmp_path):
    path = tmp_path / "s.jsonl"
    odd = json.loads(claude_line("msg_4"))
    odd["message"]["usage"]["output_tokens"] = "many"
    path.write_text(claude_line("msg_1", out=1) + claude_line("msg_2", model="<synthetic>", out=50)
                    + claude_user("go on") + claude_line("msg_3", out=3)
                    + json.dumps(odd, separators=(",", ":")) + "\n" + claude_line("msg_5", out=5), encoding="utf-8")
    assert read_all(path).tokens == 1001 + 1003 + 1005


def cache_writes(mid: str, total: int, w5m: int, w1h: int) -> str:
    entry = json.loads(claude_line(mid))
    entry["message"]["usage"].update(cache_creation_input_tokens=total, cache_creation={
        "ephemeral_5m_input_tokens": w5m, "ephemeral_1h_input_tokens": w1h})
    return json.dumps(entry, separators=(",", ":")) + "\n"


@pytest.mark.parametrize("splits", [
    [(500, 500, 0), (7, 7, 0)], [(500, 0, 500), (0, 0, 0)],  # all to one duration, as Claude Code writes them
    [(500, 500, 0), (300, 0, 300)], [(500, 200, 300)], [(900, 200, 300)], [(100, 200, 300)], [(9, 0, 0), (0, 0, 9)]])
def test_cache_writes_bill_at_their_durations_price_whatever_the_split(tmp_path, splits):
    # 5-minute and 1-hour writes are priced apart, and a total beyond its split counts as 5-minute writes.
    lines = [cache_writes(f"msg_{i}", *split) for i, split in enumerate(splits)]
    r = check(tmp_path / "s.jsonl", *lines)
    assert r.tokens == sum(1100 + max(total, w5m + w1h) for total, w5m, w1h in splits)


def test_a_bracket_in_a_string_after_the_content_reads_as_json_loads_reads_it(tmp_path):
    # A tail starts at the line's last "]": one in the stop sequence leaves the line to the JSON parser.
    odd = json.loads(claude_line("msg_2", out=2))
    odd["message"]["stop_sequence"] = "]]"
    odd["requestId"] = "req_]"
    r = check(tmp_path / "s.jsonl", claude_line("msg_1", out=1), json.dumps(odd, separators=(",", ":")) + "\n",
              claude_line("msg_3", out=3))
    assert r.tokens == 1001 + 1002 + 1003


def parent(line: str, value: str) -> str:
    """The line with this parentUuid (JSON text, in place of its own)."""
    return line.replace('"parentUuid":"a1"', f'"parentUuid":{value}', 1).replace('"parentUuid":"b2"',
                                                                               f'"parentUuid":{value}', 1)


def test_parent_uuids_of_any_length_and_a_short_one_before_a_field_of_its_own_read_as_json_loads_reads_them(tmp_path):
    # A parentUuid as long as the last one is not searched for its closing quote: the bytes after it are
    # compared where that quote would be. Lengths that change, on a run's lines and a user's, are found again;
    # a short one followed by a field of its own whose value ends where a long one would have, then the
    # session's fields and the message, is the same message to json.loads (its fields come later in the line).
    uuid = '"5e1d0000-0000-4000-8000-000000000001"'
    short = '"ab","x":"' + "y" * (len(uuid) - 1 - len('"ab","x":"')) + '"'  # as long as uuid
    lines = [parent(claude_line("msg_1", out=1), uuid), parent(claude_line("msg_1", out=2), uuid),
             parent(tool_result("x"), uuid), parent(claude_line("msg_2", out=3), '"ab"'),
             parent(claude_line("msg_2", out=4), uuid), parent(tool_result("x"), '""'),
             parent(claude_line("msg_3", out=5), '""'), parent(claude_line("msg_3", out=6), uuid),
             parent(claude_line("msg_3", out=66), short), parent(tool_result("x"), short),
             parent(claude_line("msg_4", out=7), '"' + "z" * 80 + '"'), parent(claude_line("msg_5", out=8), uuid),
             parent(claude_line("msg_5", out=88), short), without_usage(parent(claude_line("msg_5", out=9), uuid))]
    r = check(tmp_path / "s.jsonl", *lines)
    # msg_5's newest line holds no usage: the one before it that does is found again, the short one too.
    assert r.tokens == 1002 + 1004 + 1066 + 1007 + 1088


@pytest.mark.parametrize("count", ["1.5", "1e3", "-4", "01"])
def test_a_count_that_is_not_a_json_integer_reads_as_json_loads_reads_it(tmp_path, count):
    line = claude_line("msg_1", out=123456).replace('"output_tokens":123456', f'"output_tokens":{count}')
    path = tmp_path / "s.jsonl"
    path.write_text(claude_line("msg_0") + line, encoding="utf-8")
    r = read_all(path)
    if count == "01":  # not JSON: json.loads reads no message there
        assert r.tokens == 1100
    else:
        check(path, claude_line("msg_0"), line)


def test_the_sessions_fields_seen_first_or_changed_on_any_line_are_read_without_the_json_parser(tmp_path, monkeypatch):
    parsed, real = [], transcript_scan.lines.message
    monkeypatch.setattr(transcript_scan.lines, "message", lambda *a: parsed.append(a) or real(*a))
    branch = [line.replace('"gitBranch":"main"', '"gitBranch":"fix"') for line in
              (claude_line("msg_3", out=3), claude_line("msg_3", out=4), tool_result("x"))]
    r = check(tmp_path / "s.jsonl", tool_result("x"), claude_line("msg_1", out=1), claude_line("msg_2", out=2),
              *branch, claude_line("msg_5", out=5))
    assert r.tokens == 1001 + 1002 + 1004 + 1005
    assert not parsed  # every line read by comparing bytes, none by the JSON parser
