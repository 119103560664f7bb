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

The path comes from the hook's input, so it is read defensively: only a regular file is read (a
FIFO or a device would hang the hook, a directory or a NUL in the path would abort it), and a
hook reads at most ``MAX_READ`` bytes; the rest is read at the next stop. A line longer than
``MAX_LINE`` (no assistant message is: its output is capped far below; a sparse file's zeros or a
huge tool result may be) is skipped without being held, so every read is linear and bounded in
memory, and the offset moves past it: a read that starts inside a line skips to its end.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from .. import cost
from . import transcript_line as lines

BLOCK = 4 << 20  # bytes per read() call: bounds memory on a first read of a very large file
MAX_READ = 512 << 20  # bytes read per call, over all the session's files
MAX_LINE = 16 << 20
# A message's lines come one after another, each with its usage so far: only the last of a run is
# parsed, the run told by the message id ("msg_..."), found without parsing. A line without one is
# parsed alone.
_ID = re.compile(rb'"id":\s*"(msg_[^"\\]+)"')
_Span = tuple[bytes, int, int]  # a line: the buffer it was read in, its start and end there


@dataclass
class Reading:
    dollars: float = 0.0
    tokens: int = 0
    model: str | None = None  # the newest model of the main transcript (subagents may use others)
    offsets: dict[str, int] = field(default_factory=dict)
    note: str | None = None  # in one line, the paths that could not be read (their spend is not counted)


@dataclass
class _Message:
    first: int  # byte offset of its first line
    last: int  # byte offset of its last line
    model: str
    usage: dict


@dataclass
class _File:
    start: int
    end: int = 0  # where the next read starts, before any message is held back
    complete: bool = True  # read to its end, not stopped by MAX_READ
    messages: dict[str, _Message] = field(default_factory=dict)


def transcript_files(transcript_path: str | Path) -> list[Path]:
    """The session's transcript followed by its subagents' transcripts."""
    main = Path(transcript_path)
    try:
        return [main, *sorted((main.parent / main.stem / "subagents").glob("*.jsonl"))]
    except (OSError, ValueError):  # a NUL in the path, a parent that is not a folder
        return [main]


def read(transcript_path: str | Path, offsets: Mapping[str, int], *, since: datetime | None = None,
         final: bool = False) -> Reading:
    """What the session spent since ``offsets``, and the offsets to store for the next read.

    ``since`` applies to files not in ``offsets`` (a session that took a goal over, a new subagent):
    their messages from before it were not spent on the goal. A path that is not a readable regular
    file is skipped and named in ``note``.
    """
    reading, budget, bad = Reading(), MAX_READ, []
    prices: dict[str, cost.Price] = {}  # one look-up a model, not one a message
    spent: dict[cost.Price, list[tuple[int, ...]]] = {}  # each call's tokens by kind, per price: priced once, at the end
    for i, path in enumerate(transcript_files(transcript_path)):
        key = str(path)
        try:
            found = _read_file(path, offsets.get(key, 0), budget, None if key in offsets else since)
        except (OSError, ValueError) as e:
            bad.append(f"{key!r} ({getattr(e, 'strerror', None) or e})")
            continue
        if found is None:
            continue
        budget -= found.end - found.start
        # A read cut short by MAX_READ is followed by another, final or not.
        held = set() if final and found.complete else _newest(found.messages)
        for mid, m in found.messages.items():
            if mid not in held:
                price = prices[m.model] if m.model in prices else prices.setdefault(m.model, cost.price_for(m.model))
                counts = cost.usage_counts(m.usage)
                spent.setdefault(cost.applies(price, counts), []).append(counts)
        reading.offsets[key] = min((found.messages[mid].first for mid in held), default=found.end)
        if i == 0 and found.messages:
            reading.model = max(found.messages.values(), key=lambda m: m.last).model
    totals = {price: tuple(map(sum, zip(*calls))) for price, calls in spent.items()}
    reading.dollars = sum(cost.counts_cost(price, counts) for price, counts in totals.items())
    reading.tokens = sum(map(sum, totals.values()))
    if bad:
        reading.note = (f"goal-convergence: did not read the transcript {', '.join(bad)}: only a regular file is "
                        "read, so the maker's spend there is not counted")
    return reading


def _read_file(path: Path, start: int, budget: int, since: datetime | None) -> _File | None:
    try:
        # O_NONBLOCK: opening a FIFO with no writer must not wait for one.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("not a regular file")
        if start > info.st_size:  # the file was replaced by a shorter one: read the new one whole
            start = 0
        found = _File(start=start, end=start)
        stop = min(info.st_size, start + max(0, budget))
        run: tuple[bytes, int, int, _Span] | None = None  # (id, first, last offset, last line) of a run of lines
        for pos, buf, ls, le in _lines_that_may_count(fd, start, stop, found):
            mid = _message_id(buf, ls, le)
            if run and run[0] != mid:
                _take(found.messages, run[1], run[2], run[3], since)
                run = None
            if mid is None:
                _take(found.messages, pos, pos, (buf, ls, le), since)
            else:
                run = (mid, run[1] if run else pos, pos, (buf, ls, le))
        if run:
            _take(found.messages, run[1], run[2], run[3], since)
        found.complete = stop >= info.st_size
        if found.end == start and not found.complete and stop - start >= min(MAX_LINE, MAX_READ):
            found.end = stop  # one line longer than a whole read (a sparse file's zeros): past it, not again from 0
        return found
    finally:
        os.close(fd)


def _lines_that_may_count(fd: int, start: int, stop: int, found: _File) -> Iterator[tuple[int, bytes, int, int]]:
    """(offset, buffer, start and end of the line in the buffer, without its newline) for each
    newline-terminated line of at most ``MAX_LINE`` bytes between ``start`` and ``stop`` that
    ``lines.may_count``: a span of the block read, never copied out of it (only a line that
    straddles two blocks is joined, once, so a huge line costs linear time). ``found.end``
    becomes where the next read starts: the unfinished last line's start (Claude Code may still be
    writing it), or past it once it is too long to keep."""
    # A start inside a line (the previous read stopped in an over-long one): skip to its end.
    skipping = start > 0 and os.pread(fd, 1, start - 1) != b"\n"
    may_count = lines.may_count
    parts: list[bytes] = []
    held = 0  # bytes in parts
    line_at = at = start  # line_at: where the unfinished line starts
    while at < stop and (block := os.pread(fd, min(BLOCK, stop - at), at)):
        first = block.find(b"\n")  # memchr: rfind would scan a newline-less block of a huge line byte by byte
        cut = block.rfind(b"\n") + 1 if first >= 0 else 0
        if cut:
            if not skipping and held + first <= MAX_LINE:
                line = b"".join([*parts, block[:first]]) if parts else block
                if may_count(line, 0, held + first):
                    yield line_at, line, 0, held + first
            parts, held, skipping = [], 0, False
            ls, find = first + 1, block.find
            while ls < cut:
                le = find(b"\n", ls)
                if le - ls <= MAX_LINE and may_count(block, ls, le):
                    yield at + ls, block, ls, le
                ls = le + 1
            line_at = at + cut
        if cut < len(block) and not skipping:
            if held + len(block) - cut > MAX_LINE:
                parts, held, skipping = [], 0, True
            else:
                parts.append(block[cut:])
                held += len(block) - cut
        at += len(block)
    found.end = at if skipping else line_at


def _message_id(buf: bytes, start: int, end: int) -> bytes | None:
    """``_ID.search`` of the line, its literal start found by ``bytes.find`` (the regex engine's own scan is slower)."""
    at = buf.find(b'"id":', start, end)
    while at >= 0:
        if found := _ID.match(buf, at, end):
            return found[1]
        at = buf.find(b'"id":', at + 1, end)
    return None


def _take(messages: dict[str, _Message], first: int, pos: int, line: _Span, since: datetime | None) -> None:
    """Count the message of ``line`` (at ``pos``; its run of lines began at ``first``)."""
    found = lines.message(*line)
    if found is None:
        return
    mid, model, usage, stamp = found
    if model == "<synthetic>" or not isinstance(usage, dict) or not mid:
        return
    if since is not None and _before(stamp, since):
        return
    seen = messages.get(mid)
    messages[mid] = _Message(seen.first if seen else first, pos, model, usage)


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
