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
huge tool result may be) is skipped, so every read is linear, and the offset moves past it: a read
that starts inside a line skips to its end.

The file is mapped (``mmap``), ``WINDOW`` bytes at a time, not read: the lines are found and compared
where the page cache holds them, never copied, which is most of what a plain read would cost. The one
thing a read survives and a map does not is the file cut short in place while it is mapped (the
process gets SIGBUS): Claude Code only appends to a transcript, and one replaced by another file
(a new inode) is read from the old mapping unharmed.
"""

from __future__ import annotations

import mmap
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from .. import cost
from . import transcript_line as lines

WINDOW = 64 << 20  # bytes mapped at a time; a window starts at a line, so any line up to MAX_LINE fits in one
MAX_READ = 512 << 20  # bytes read per call, over all the session's files
MAX_LINE = 16 << 20
# A message's lines come one after another, each with its usage so far: only the last of a run is
# parsed, the run told by the message id ("msg_..."), found without parsing. A line without one is
# parsed alone.
_ID = re.compile(rb'"id":\s*"(msg_[^"\\]+)"')


@dataclass
class Reading:
    dollars: float = 0.0
    tokens: int = 0
    model: str | None = None  # the newest model of the main transcript (subagents may use others)
    offsets: dict[str, int] = field(default_factory=dict)
    note: str | None = None  # in one line, the paths that could not be read (their spend is not counted)


@dataclass(slots=True)
class _Message:
    first: int  # byte offset of its first line
    last: int  # byte offset of its last line
    model: str
    usage: dict | tuple[int, int, int, int, int]  # already its ``cost.usage_counts`` when read from the line's bytes


@dataclass
class _File:
    start: int
    end: int = 0  # where the next read starts, before any message is held back
    complete: bool = True  # read to its end, not stopped by MAX_READ
    messages: dict[str, _Message] = field(default_factory=dict)
    newest: str | None = None  # the message of the last line counted (messages are counted in the file's order)


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
    calls: dict[str, list[tuple[int, ...]]] = {}  # each call's tokens by kind, per model: priced once, at the end
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
        held = set() if final and found.complete else _newest(found.messages, found.newest)
        for mid, m in found.messages.items():
            if mid not in held:
                (calls[m.model] if m.model in calls else calls.setdefault(m.model, [])).append(
                    m.usage if isinstance(m.usage, tuple) else cost.usage_counts(m.usage))
        reading.offsets[key] = min((found.messages[mid].first for mid in held), default=found.end)
        if i == 0 and found.newest is not None:
            reading.model = found.messages[found.newest].model
    spent: dict[cost.Price, list[tuple[int, ...]]] = {}
    for model, counts in calls.items():
        price = cost.price_for(model)  # one look-up a model, not one a message
        if price.long_context is None:
            spent.setdefault(price, []).extend(counts)
        else:
            for one in counts:
                spent.setdefault(cost.applies(price, one), []).append(one)
    totals = {price: tuple(map(sum, zip(*counts))) for price, counts in spent.items()}
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
        scan = _Scan(since, found)
        found.end = _read_lines(fd, start, stop, scan)
        if scan.run[0] is not None:
            scan.take(*scan.run)
        found.complete = stop >= info.st_size
        if found.end == start and not found.complete and stop - start >= min(MAX_LINE, MAX_READ):
            found.end = stop  # one line longer than a whole read (a sparse file's zeros): past it, not again from 0
        return found
    finally:
        os.close(fd)


def _read_lines(fd: int, start: int, stop: int, scan: _Scan) -> int:
    """Hands ``scan`` the newline-terminated lines between ``start`` and ``stop``, as spans of the file
    mapped ``WINDOW`` bytes at a time (a line is never copied, and a window starts at the first line
    the previous one left unfinished). Returns where the next read starts: the unfinished last line's
    start (Claude Code may still be writing it), or past it once it is longer than ``MAX_LINE``."""
    # A start inside a line (the previous read stopped in an over-long one): skip to its end.
    at = _past_line(fd, start, stop) if start > 0 and os.pread(fd, 1, start - 1) != b"\n" else start
    while at < stop:
        base = at - at % mmap.ALLOCATIONGRANULARITY
        end = min(base + WINDOW, stop)
        view = _window(fd, base, end)
        cut = view.rfind(b"\n", at - base) + 1
        if cut:
            scan.lines(view, at - base, cut, base)
            at = base + cut
        if end == stop:
            break
        if not cut:  # a line longer than a window
            at = _past_line(fd, at, stop)
    return stop if stop - at > MAX_LINE else at


def _window(fd: int, start: int, end: int) -> mmap.mmap | bytes:
    """The file's bytes from ``start`` (a multiple of the page size) to ``end``: mapped, or read where
    the file system cannot map them (they are searched and sliced alike)."""
    try:
        return mmap.mmap(fd, end - start, access=mmap.ACCESS_READ, offset=start)
    except OSError:
        return os.pread(fd, end - start, start)


def _past_line(fd: int, at: int, stop: int) -> int:
    """The offset after the newline that ends the line ``at`` is in, or ``stop``."""
    while at < stop:
        base = at - at % mmap.ALLOCATIONGRANULARITY
        end = min(base + WINDOW, stop)
        found = _window(fd, base, end).find(b"\n", at - base)
        if found >= 0:
            return base + found + 1
        at = end
    return stop


class _Scan:
    """The messages of one file's lines, given in order. A line of Claude Code's own layout is told by
    comparing bytes (``transcript_line.PREFIX``, ``HEAD``): a user's skipped, an assistant's message id
    read from its head and, for the last line of a run, its usage from its tail (``billed``). A line
    of any other shape is read by ``transcript_line.may_count`` and ``message``, its run told by
    ``_message_id``. A line without a ``"usage"`` bills nothing, so it neither joins nor ends a run."""

    def __init__(self, since: datetime | None, found: _File) -> None:
        self.since, self.found, self.messages = since, found, found.messages
        self.names: dict[bytes, str] = {}  # each model's name, decoded once
        self.prefix: bytes | None = None  # the session's fields between parentUuid and the rest, as last seen
        # The run of one message's lines being read: (id, first and last offset, the last line as
        # buffer, start and end, the bytes it starts with after its parentUuid and its model when it
        # is of Claude Code's layout, else None and None). No run: id None.
        self.run: tuple = (None, 0, 0, b"", 0, 0, None, None)

    def lines(self, buf: bytes, ls: int, cut: int, base: int) -> None:
        """The lines of ``buf[ls:cut]``, each ending with a newline; ``base`` is the offset of ``buf``."""
        # Bytes are compared as slices: cheaper than startswith, whose arguments are parsed the slow way.
        find, rfind, head_match = buf.find, buf.rfind, lines.HEAD.match
        prefix = self.prefix
        mid, first, last, rbuf, rls, rle, head, model = self.run
        size = len(head) if head is not None else 0
        while ls < cut:
            le = find(b"\n", ls)
            if le - ls > MAX_LINE:
                ls = le + 1
                continue
            # Where the fields after a string parentUuid start: an escaped quote in it fails the comparisons below.
            q = find(b'"', ls + 15, le) + 1 if buf[ls:ls + 15] == b'{"parentUuid":"' else 0
            if q:
                if buf[q:q + size] == head:  # another line of the run's message
                    if rfind(b'"usage"', ls, le) >= 0:
                        last, rbuf, rls, rle = base + ls, buf, ls, le
                    ls = le + 1
                    continue
                at = q + len(prefix) if prefix is not None else 0
                if at and buf[q:at] == prefix:
                    if buf[at:at + 14] == b'"type":"user",':
                        ls = le + 1
                        continue
                    if (found := head_match(buf, at)) is not None:
                        if rfind(b'"usage"', ls, le) >= 0:
                            if mid != found[2]:
                                if mid is not None:
                                    self.take(mid, first, last, rbuf, rls, rle, head, model)
                                mid, first = found[2], base + ls
                            last, rbuf, rls, rle, head, model = base + ls, buf, ls, le, buf[q:found.end()], found[1]
                            size = len(head)
                        ls = le + 1
                        continue
            if lines.may_count(buf, ls, le):
                key = _message_id(buf, ls, le)
                if mid is not None and mid != key:
                    self.take(mid, first, last, rbuf, rls, rle, head, model)
                    mid, head, model, size = None, None, None, 0
                if key is None:
                    self.take(None, base + ls, base + ls, buf, ls, le, None, None)
                else:
                    if mid is None:
                        mid, first = key, base + ls
                    last, rbuf, rls, rle, head, model, size = base + ls, buf, ls, le, None, None, 0
            if (found := lines.PREFIX.match(buf, ls, le)) is not None:
                prefix = found[1]
            ls = le + 1
        self.prefix = prefix
        self.run = mid, first, last, rbuf, rls, rle, head, model

    def take(self, key: bytes | None, first: int, last: int, buf: bytes, ls: int, le: int, head: bytes | None,
             model: bytes | None) -> None:
        """Count the message of the line ``buf[ls:le]`` (at ``last``; its run of lines began at ``first``)."""
        usage: dict | tuple
        # An id or a model with an escape in it is left to the JSON parser, which decodes it.
        if head is not None and b"\\" not in key and b"\\" not in model and (bill := lines.billed(buf, ls, le)):
            usage, stamp = bill
            try:
                mid = key.decode()
                name = self.names[model] if model in self.names else self.names.setdefault(model, model.decode())
                stamp = stamp.decode() if self.since is not None else stamp
            except UnicodeDecodeError:  # json.loads of the line would fail too
                return
        else:
            found = lines.message(buf, ls, le)
            if found is None:
                return
            mid, name, usage, stamp = found
            if not isinstance(usage, dict):
                return
        if name == "<synthetic>" or not mid:
            return
        if self.since is not None and _before(stamp, self.since):
            return
        seen = self.messages.get(mid)
        self.messages[mid] = _Message(seen.first if seen else first, last, name, usage)
        self.found.newest = mid


def _message_id(buf: bytes, start: int, end: int) -> bytes | None:
    """``_ID.search`` of the line, its literal start found by ``bytes.find`` (the regex engine's own scan is slower)."""
    at = buf.find(b'"id":', start, end)
    while at >= 0:
        if found := _ID.match(buf, at, end):
            return found[1]
        at = buf.find(b'"id":', at + 1, end)
    return None


def _before(stamp: object, since: datetime) -> bool:
    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")) < since
    except (ValueError, TypeError):  # no usable timestamp: count it rather than lose spend
        return False


def _newest(messages: dict[str, _Message], newest: str | None) -> set[str]:
    """The newest message, plus any whose lines interleave with it: held back, so that lines of
    theirs still to be written are read together with the ones already there."""
    if newest is None:
        return set()
    cut = messages[newest].first
    while True:
        held = {mid for mid, m in messages.items() if m.last >= cut}
        earliest = min(messages[mid].first for mid in held)
        if earliest == cut:
            return held
        cut = earliest
