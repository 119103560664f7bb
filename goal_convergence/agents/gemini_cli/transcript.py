"""The maker's spend, read from Gemini CLI's chat recording a little at a time.

Gemini CLI (0.61) records a session in ``~/.gemini/tmp/<project>/chats/session-*.jsonl`` (the hook input's
``transcript_path``), one JSON object a line: the session's metadata first, ``{"$set": ...}`` updates, and
messages. A message is written again whenever it changes (its tokens arrive, its tool calls run), always
the newest message, with the same ``id``: so a message counts once, with its last line, and a read that
may be followed by another (AfterAgent) holds the newest message back (the next read starts at its first
line), as Claude Code's meter does (claude_code/transcript.py). A model message's ``tokens`` are the API's
usage: ``input`` (the prompt, cached part included), ``cached``, ``output``, ``thoughts`` (billed as
output) and ``tool``. Subagents record beside it, in ``chats/<session id>/*.jsonl``.

A model with no price is never counted as $0 without a word: its tokens are counted, and ``unpriced``
names it, so the hook says so and the goal's token budget holds it (hooks.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ...models import parse_iso
from ...storage import cost
from ..claude_code.transcript import Reading, opened, unread, unread_note

MAX_READ = 512 << 20  # bytes read per call, over all the session's files


@dataclass
class GeminiReading(Reading):
    unpriced: dict[str, int] = field(default_factory=dict)  # model -> tokens that no price counted


@dataclass
class _Messages:
    usage: dict[str, tuple[str, dict]] = field(default_factory=dict)  # id -> (model, tokens), the last line's
    first: dict[str, int] = field(default_factory=dict)  # id -> offset of its first line in this read
    order: list[str] = field(default_factory=list)


def transcript_files(transcript_path: str | Path) -> list[Path]:
    """The session's recording followed by its subagents' recordings."""
    main = Path(transcript_path)
    try:
        with main.open("rb") as fh:
            session = json.loads(fh.readline() or b"{}").get("sessionId")
        if isinstance(session, str) and session and "/" not in session and session not in (".", ".."):
            return [main, *sorted((main.parent / session).glob("*.jsonl"))]
    except (OSError, ValueError, AttributeError):
        pass
    return [main]


def read(transcript_path: str | Path, offsets: Mapping[str, int], *, since: datetime | None = None,
         final: bool = False) -> GeminiReading:
    """What the session spent since ``offsets``, and the offsets to store for the next read (``since``: as
    claude_code/transcript.py's ``read``).

    The recordings of the goal's earlier sessions (in ``offsets``, not this session's) are read to their end:
    a session that died of an API error ends without its SessionEnd hook (Gemini CLI exits at once), and
    the message its last read held back is charged here, once, by the session that took the goal over."""
    reading, budget, bad = GeminiReading(), MAX_READ, []
    spent: dict[str, list[tuple[int, ...]]] = {}
    current = transcript_files(transcript_path)
    earlier = [Path(p) for p in offsets if Path(p) not in current]
    for i, path in enumerate([*current, *earlier]):
        key, last = str(path), final or i >= len(current)
        try:
            found = _read_file(path, offsets.get(key, 0), budget, None if key in offsets else since)
        except (OSError, ValueError) as e:
            bad.append(unread(key, e))
            continue
        if found is None:
            continue
        end, complete, messages = found
        budget -= end - offsets.get(key, 0)
        held = messages.order[-1:] if messages.order and not (last and complete) else []
        reading.offsets[key] = messages.first[held[0]] if held else end
        for message_id in messages.order:
            if message_id in held:
                continue
            model, tokens = messages.usage[message_id]
            spent.setdefault(model, []).append(_counts(tokens))
        if i == 0 and messages.order:
            reading.model = messages.usage[messages.order[-1]][0]
    reading.dollars, reading.tokens, reading.unpriced = cost.priced(spent)
    reading.note = unread_note(bad)
    return reading


def _counts(tokens: dict) -> tuple[int, ...]:
    def n(name: str) -> int:
        value = tokens.get(name)
        return value if isinstance(value, int) else 0

    return cost.gemini_counts(n("input"), n("cached"), n("output"), n("thoughts"), n("tool"))


def _read_file(path: Path, start: int, budget: int,
               since: datetime | None) -> tuple[int, bool, _Messages] | None:
    with opened(path) as file:
        if file is None:
            return None
        fd, size = file
        start = 0 if start > size else start  # replaced by a shorter file: read the new one whole
        stop = min(size, start + max(0, budget))
        data = os.pread(fd, stop - start, start)
    end = start + data.rfind(b"\n") + 1  # complete lines only
    messages, offset = _Messages(), start
    for line in data[:end - start].splitlines(keepends=True):
        _take(line, offset, messages, since)
        offset += len(line)
    return end, stop >= size and end == stop, messages


def _take(line: bytes, offset: int, messages: _Messages, since: datetime | None) -> None:
    if b'"tokens"' not in line:
        return  # metadata, updates, the user's messages: no spend
    try:
        entry = json.loads(line)
    except ValueError:
        return
    message_id, tokens = entry.get("id"), entry.get("tokens")
    if entry.get("type") != "gemini" or not isinstance(message_id, str) or not isinstance(tokens, dict):
        return
    if since is not None and message_id not in messages.first:
        try:
            if parse_iso(str(entry.get("timestamp"))) < since:
                return  # before the goal was this session's
        except ValueError:
            pass
    model = entry.get("model")
    if message_id not in messages.first:
        messages.first[message_id] = offset
        messages.order.append(message_id)
    messages.usage[message_id] = (model if isinstance(model, str) and model else "unknown", tokens)
