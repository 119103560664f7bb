"""The maker's spend, read from Claude Code's JSONL transcripts a little at a time.

Claude Code writes one transcript line per content block of an assistant message, each carrying
the same ``message.id`` and usage (a streamed message may first get a line with fewer output
tokens), so a message is counted once, with the usage of its last line. Transcripts grow to
hundreds of MB: each read starts at the byte offset the previous one stopped at, reads complete
lines only, and includes the subagent transcripts (``<session-id>/subagents/*.jsonl``).

A message whose lines straddle two reads must still count once, and the goal can keep nothing but
an integer offset per file. So a read that may be followed by another (a Stop) holds the newest
message back: it is left unread, and the returned offset points at its first line so the next read
sees all of it. Only the last read of a session (``final``) counts everything. Only the hooks'
slow path reads transcripts (a goal is bound to the session), never the fast path.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from .. import cost
from ..lines import LineReader

BLOCK = 4 << 20  # bytes per read() call: bounds memory on a first read of a very large file


@dataclass
class Reading:
    dollars: float = 0.0
    tokens: int = 0
    model: str | None = None  # the newest model of the main transcript (subagents may use others)
    offsets: dict[str, int] = field(default_factory=dict)


@dataclass
class _Message:
    first: int  # byte offset of its first line
    last: int  # byte offset of its last line
    model: str
    usage: dict


def transcript_files(transcript_path: str | Path) -> list[Path]:
    """The session's transcript followed by its subagents' transcripts."""
    main = Path(transcript_path)
    return [main, *sorted((main.parent / main.stem / "subagents").glob("*.jsonl"))]


def read(transcript_path: str | Path, offsets: Mapping[str, int], *, since: datetime | None = None,
         final: bool = False) -> Reading:
    """What the session spent since ``offsets``, and the offsets to store for the next read.

    ``since`` applies to files not in ``offsets`` (a session that took a goal over, a new subagent):
    their messages from before it were not spent on the goal.
    """
    reading = Reading()
    for i, path in enumerate(transcript_files(transcript_path)):
        key = str(path)
        known = key in offsets
        found = _read_file(path, offsets.get(key, 0), None if known else since, final)
        if found is None:
            continue
        dollars, tokens, model, offset = found
        reading.dollars += dollars
        reading.tokens += tokens
        reading.offsets[key] = offset
        if i == 0 and model:
            reading.model = model
    return reading


def _read_file(path: Path, start: int, since: datetime | None, final: bool) -> tuple[float, int, str | None, int] | None:
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        return None
    with fh:
        if start > _size(fh):  # the file was replaced by a shorter one: read the new one whole
            start = 0
        messages: dict[str, _Message] = {}
        end = start
        for pos, line in _complete_lines(fh, start):
            end = pos + len(line) + 1
            _take(messages, pos, line, since)
    held = set() if final else _newest(messages)
    counted = [m for mid, m in messages.items() if mid not in held]
    dollars = sum(cost.usage_cost(m.model, m.usage) for m in counted)
    tokens = sum(cost.usage_tokens(m.usage) for m in counted)
    offset = min((messages[mid].first for mid in held), default=end)
    newest = max(messages.values(), key=lambda m: m.last).model if messages else None
    return dollars, tokens, newest, offset


def _size(fh) -> int:
    fh.seek(0, 2)
    return fh.tell()


def _complete_lines(fh, start: int) -> Iterator[tuple[int, bytes]]:
    """(offset, line without newline) for each newline-terminated line from ``start``; a partial
    last line (Claude Code still writing it) is left for the next read."""
    fh.seek(start)
    pos, reader = start, LineReader(max_line=None)  # a cut line would put the offsets out
    while block := fh.read(BLOCK):
        lines = reader.feed(block).split(b"\n")
        lines.pop()  # what follows the last newline: nothing, or the partial line the reader holds
        for line in lines:
            yield pos, line
            pos += len(line) + 1


def _take(messages: dict[str, _Message], pos: int, line: bytes, since: datetime | None) -> None:
    if b'"assistant"' not in line or b'"usage"' not in line:  # cheap test first: most lines are not
        return
    try:
        entry = json.loads(line)
        message = entry["message"]
        mid, model, usage = message["id"], message["model"], message["usage"]
    except (ValueError, KeyError, TypeError):
        return
    if entry.get("type") != "assistant" or model == "<synthetic>" or not isinstance(usage, dict) or not mid:
        return
    if since is not None and _before(entry.get("timestamp"), since):
        return
    seen = messages.get(mid)
    messages[mid] = _Message(seen.first if seen else pos, pos, model, usage)


def _before(stamp: object, since: datetime) -> bool:
    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")) < since
    except (ValueError, TypeError):  # no usable timestamp: count it rather than lose spend
        return False


def _newest(messages: dict[str, _Message]) -> set[str]:
    """The newest message, plus any whose lines interleave with it: held back, so that lines of
    theirs still to be written are read together with the ones already there."""
    if not messages:
        return set()
    cut = max(messages.values(), key=lambda m: m.last).first
    while True:
        held = {mid for mid, m in messages.items() if m.last >= cut}
        earliest = min(messages[mid].first for mid in held)
        if earliest == cut:
            return held
        cut = earliest
